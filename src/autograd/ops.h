// All autograd ops.
#pragma once

#include "autograd/ops/conv.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/linear.h"
#include "autograd/ops/loss.h"
#include "autograd/ops/norm.h"
#include "autograd/ops/pool.h"
#include "autograd/ops/shape.h"

#!/usr/bin/env python3
"""The source tree's rooms and who may include whom (docs/design.md, "Layers").

Every `#include "room/..."` of a file under src/ must name its own room or one below it in
ROOMS, and the performance model (src/perfmodel) must stay a library that prices work and
reads profiles: of comm it may include only the pure cost and bucket-plan headers, never a
transport, the MPI runtime, training (parallel, train, checkpoint, data, optim) or the
calibration. A violation names the file, its line and the rule it breaks.
"""
import pathlib
import re
import sys
import unittest

SRC = pathlib.Path(__file__).resolve().parent.parent / "src"

# Lowest first; a room may include itself and the rooms before it.
ROOMS = ["core", "tensor", "autograd", "nn", "optim", "data", "comm", "pipeline", "tensorparallel", "perfmodel", "schedule", "checkpoint", "train",
         "parallel", "ps", "calibration"]

# What the model may include from the rooms below it (a room, or one header of it).
MODEL_MAY_INCLUDE = {"core", "tensor", "autograd", "nn", "comm/algorithm.h", "comm/bucket_plan.h",
                     "pipeline/schedule.h", "tensorparallel/plan.h"}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def includes(path):
    """(line number, kind, target) for each #include of a file."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = INCLUDE.match(line)
        if m:
            yield number, m.group(1), m.group(2)


def violations(src=SRC):
    found = []
    for path in sorted(src.rglob("*")):
        if path.suffix not in (".h", ".cpp") or not path.is_file():
            continue
        room = path.relative_to(src).parts[0]
        if room not in ROOMS:
            found.append(f"{path.relative_to(src)}: room '{room}' is not in ROOMS (tests/layering_test.py)")
            continue
        for number, kind, target in includes(path):
            where = f"src/{path.relative_to(src)}:{number}"
            if kind == "<":
                if target == "mpi.h" and not str(path.relative_to(src)).startswith("comm/mpi/"):
                    found.append(f"{where}: <mpi.h> outside src/comm/mpi (the MPI runtime stays behind the transport)")
                continue
            other = target.split("/")[0]
            if other not in ROOMS:
                continue
            if ROOMS.index(other) > ROOMS.index(room):
                found.append(f"{where}: {room} includes the higher room {other} ({target})")
            if room == "perfmodel" and other != "perfmodel" and other not in MODEL_MAY_INCLUDE \
                    and target not in MODEL_MAY_INCLUDE:
                found.append(f"{where}: the model includes {target}; it may include only "
                             f"{', '.join(sorted(MODEL_MAY_INCLUDE))} (no runtime, training or calibration)")
    return found


class Layering(unittest.TestCase):
    def test_every_room_includes_only_rooms_below_it(self):
        self.assertEqual(violations(), [], "\n".join(violations()))

    def test_the_rooms_listed_are_the_folders_of_src(self):
        folders = sorted(p.name for p in SRC.iterdir() if p.is_dir())
        self.assertEqual(folders, sorted(ROOMS))

    def test_a_model_file_that_includes_training_is_caught(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            root = pathlib.Path(d)
            for room in ROOMS:
                (root / room).mkdir()
            (root / "perfmodel" / "bad.cpp").write_text('#include "parallel/buckets.h"\n#include "comm/hosts.h"\n')
            (root / "comm" / "up.h").write_text('#include "perfmodel/profile.h"\n')
            (root / "calibration" / "ok.cpp").write_text('#include "parallel/buckets.h"\n#include <mpi.h>\n')
            found = violations(root)
            self.assertEqual(len(found), 5, "\n".join(found))
            self.assertTrue(any("perfmodel/bad.cpp:1: perfmodel includes the higher room parallel" in f for f in found))
            self.assertTrue(any("perfmodel/bad.cpp:2: the model includes comm/hosts.h" in f for f in found))
            self.assertTrue(any("comm/up.h:1: comm includes the higher room perfmodel" in f for f in found))
            self.assertTrue(any("calibration/ok.cpp:2: <mpi.h> outside" in f for f in found))


if __name__ == "__main__":
    unittest.main(verbosity=2)

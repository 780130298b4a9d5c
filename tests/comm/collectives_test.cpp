// Broadcast, allgather, reduce-scatter and barrier on the local backend, world sizes 1..9.
#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
#include <thread>

#include "comm/local_transport.h"
#include "comm_test_util.h"
#include "core/error.h"

namespace dtrain::comm {
namespace {

using testing::TypedBuffer;

std::byte pattern(int rank, std::size_t i) { return static_cast<std::byte>((rank * 131 + i * 7) & 0xff); }

TEST(Broadcast, EveryRootAllWorldSizes) {
  for (int p = 1; p <= 9; ++p) {
    for (std::size_t bytes :
         {std::size_t{0}, std::size_t{1}, static_cast<std::size_t>(p + 1), std::size_t{1000}, std::size_t{700000}}) {
      run_local(
          p,
          [&](Communicator& comm) {
            for (int root = 0; root < p; ++root) {
              std::vector<std::byte> buf(bytes);
              for (std::size_t i = 0; i < bytes; ++i) buf[i] = comm.rank() == root ? pattern(root, i) : std::byte{0};
              comm.broadcast(buf.data(), bytes, root);
              for (std::size_t i = 0; i < bytes; ++i) {
                ASSERT_EQ(buf[i], pattern(root, i))
                    << "p=" << p << " root " << root << " rank " << comm.rank() << " byte " << i;
              }
            }
          },
          testing::test_options());
    }
  }
}

TEST(Broadcast, BadRootIsInputError) {
  run_local(
      2,
      [](Communicator& comm) {
        char c = 0;
        EXPECT_THROW(comm.broadcast(&c, 1, 2), InputError);
      },
      testing::test_options());
}

TEST(Allgather, InPlaceAndOutOfPlace) {
  for (int p = 1; p <= 9; ++p) {
    for (std::size_t per : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{1000}, std::size_t{300001}}) {
      run_local(
          p,
          [&](Communicator& comm) {
            const auto P = static_cast<std::size_t>(p);
            const auto me = static_cast<std::size_t>(comm.rank());
            std::vector<std::byte> all(P * per, std::byte{0xee});
            for (std::size_t i = 0; i < per; ++i) all[me * per + i] = pattern(comm.rank(), i);
            comm.allgather(all.data(), per);
            for (std::size_t r = 0; r < P; ++r) {
              for (std::size_t i = 0; i < per; ++i) {
                ASSERT_EQ(all[r * per + i], pattern(static_cast<int>(r), i)) << "p=" << p << " block " << r;
              }
            }
            std::vector<std::byte> mine(per), out(P * per);
            for (std::size_t i = 0; i < per; ++i) mine[i] = pattern(comm.rank() + 1, i);
            comm.allgather(mine.data(), out.data(), per);
            for (std::size_t r = 0; r < P; ++r) {
              for (std::size_t i = 0; i < per; ++i) ASSERT_EQ(out[r * per + i], pattern(static_cast<int>(r) + 1, i));
            }
          },
          testing::test_options());
    }
  }
}

TEST(ReduceScatter, ClosedFormAllDtypes) {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (int p = 1; p <= 9; ++p) {
      for (std::size_t per : {std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{1000}, std::size_t{70001}}) {
        run_local(
            p,
            [&](Communicator& comm) {
              const std::size_t total = per * static_cast<std::size_t>(p);
              TypedBuffer buf(dtype, testing::closed_form_data(comm.rank(), total));
              comm.reduce_scatter(buf.data(), per, dtype);
              const std::size_t first = per * static_cast<std::size_t>(comm.rank());
              for (std::size_t i = first; i < first + per; ++i) {
                ASSERT_EQ(buf.get(i), testing::closed_form_sum(p, i))
                    << dtype_name(dtype) << " p=" << p << " rank " << comm.rank() << " element " << i;
              }
            },
            testing::test_options());
      }
    }
  }
}

TEST(ReduceScatterThenAllgather, EqualsAllreduce) {
  // The two halves of a ring allreduce, called separately (as a sharded optimizer would).
  run_local(
      5,
      [](Communicator& comm) {
        const std::size_t per = 1234, total = per * 5;
        TypedBuffer buf(DType::kF32, testing::closed_form_data(comm.rank(), total));
        comm.reduce_scatter(buf.data(), per, DType::kF32);
        comm.allgather(buf.data(), per * sizeof(float));
        for (std::size_t i = 0; i < total; ++i) ASSERT_EQ(buf.get(i), testing::closed_form_sum(5, i));
      },
      testing::test_options());
}

TEST(Barrier, NoRankLeavesBeforeAllArrive) {
  for (int p = 1; p <= 9; ++p) {
    std::atomic<int> arrived{0};
    run_local(
        p,
        [&](Communicator& comm) {
          for (int round = 1; round <= 20; ++round) {
            // Stagger arrivals so a broken barrier would let an early rank through.
            if (comm.rank() == round % p) std::this_thread::sleep_for(std::chrono::microseconds(200));
            arrived.fetch_add(1);
            comm.barrier();
            ASSERT_GE(arrived.load(), round * p) << "p=" << p << " round " << round << " rank " << comm.rank();
            comm.barrier();  // nobody starts the next round's increment before everyone checked
          }
        },
        testing::test_options());
  }
}

}  // namespace
}  // namespace dtrain::comm

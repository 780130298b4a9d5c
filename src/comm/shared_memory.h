// Memory that every rank of a transport can address: one region per rank. Ranks
// on one host map each other's regions (an MPI-3 shared window; threads of one process simply
// share their address space), so a collective can read and write a peer's buffer directly instead
// of sending it messages (algorithms/shared_memory.h).
#pragma once

#include <cstddef>
#include <vector>

namespace dtrain::comm {

class SharedRegion {
 public:
  SharedRegion(std::vector<std::byte*> bases, std::size_t bytes_per_rank)
      : bases_(std::move(bases)), bytes_(bytes_per_rank) {}
  virtual ~SharedRegion() = default;
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  // Rank `rank`'s region as this process addresses it; 64-byte aligned.
  std::byte* base(int rank) const { return bases_.at(static_cast<std::size_t>(rank)); }
  // This rank's region's size (another rank's may differ).
  std::size_t bytes() const { return bytes_; }
  // The owner of the regions stops using them after a failed collective: freeing them may need
  // every rank (MPI_Win_free is collective), so a region left behind by an error is released when
  // the process ends instead.
  void abandon() { abandoned_ = true; }

 protected:
  bool abandoned() const { return abandoned_; }

 private:
  std::vector<std::byte*> bases_;
  std::size_t bytes_;
  bool abandoned_ = false;
};

}  // namespace dtrain::comm

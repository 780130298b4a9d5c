// Whole-file reads for the dataset readers, with gzip decompression. Every size is bounded by the
// caller's limit before memory is committed, so a corrupt or hostile file (a gzip bomb, a file
// that is not what its name says) costs at most that limit. Failures are DataErrors that start
// with the file's path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dtrain {

// The file's bytes. Throws DataError when it is missing, not a regular file, unreadable or larger
// than max_bytes.
std::vector<std::uint8_t> read_file_bytes(const std::string& path, std::size_t max_bytes);

// True when the bytes start with the gzip magic (0x1f 0x8b).
bool has_gzip_magic(std::span<const std::uint8_t> bytes);

struct Inflated {
  std::vector<std::uint8_t> bytes;
  bool more = false;       // the stream holds more than the bytes returned
  bool truncated = false;  // the file ends before the end of the stream; bytes holds what came before
};

// Decompresses at most max_bytes of a gzip stream (several concatenated members allowed); `path`
// only names the source in messages. Memory grows with the data actually produced, never with
// what the trailer claims. When neither `more` nor `truncated` is set, the whole stream was
// decoded and its checksums verified. Throws DataError when the data is not gzip, is corrupt or is
// followed by junk.
Inflated gunzip_prefix(std::span<const std::uint8_t> compressed, const std::string& path, std::size_t max_bytes);

// The whole decompressed stream; a truncated stream or one of more than max_bytes is a DataError.
std::vector<std::uint8_t> gunzip(std::span<const std::uint8_t> compressed, const std::string& path,
                                 std::size_t max_bytes);

// Whether a file should be decompressed: a name ending in ".gz" must hold gzip data (gunzip says
// so when it does not), any other name is gzip when it starts with the gzip magic.
bool is_gzip_file(const std::string& path, std::span<const std::uint8_t> bytes);

// "1.0 GiB", "47.0 MiB", "512 bytes": sizes in messages.
std::string format_bytes(std::size_t bytes);

}  // namespace dtrain

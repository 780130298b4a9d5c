#include "comm/instrumented_transport.h"

namespace dtrain::comm {

Request InstrumentedTransport::isend(const void* data, std::size_t bytes, int peer, int tag) {
  Request r = inner_.isend(data, bytes, peer, tag);
  ++counts_.messages_sent;
  counts_.bytes_sent += bytes;
  return r;
}

Request InstrumentedTransport::irecv(void* data, std::size_t bytes, int peer, int tag) {
  Request r = inner_.irecv(data, bytes, peer, tag);
  ++counts_.messages_received;
  counts_.bytes_received += bytes;
  return r;
}

}  // namespace dtrain::comm

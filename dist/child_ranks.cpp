#include "dist/child_ranks.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "dist/bytes.hpp"
#include "dist/local_ranks.hpp"

namespace tpuemu::dist {
namespace {

enum class Op : std::uint32_t { kMin = 1, kMax, kExchange, kAllGather, kGather, kBroadcast, kAbort };

bool write_all(int fd, const std::uint8_t* p, std::size_t n) {
  while (n > 0) {
    // MSG_NOSIGNAL: a peer that died is a false return here, not a SIGPIPE.
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

bool read_all(int fd, std::uint8_t* p, std::size_t n) {
  while (n > 0) {
    const ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

bool write_frame(int fd, const Bytes& body) {
  const std::uint64_t n = body.size();
  return write_all(fd, reinterpret_cast<const std::uint8_t*>(&n), sizeof n) && write_all(fd, body.data(), body.size());
}

// nullopt-like: false at a clean end of the channel or when it broke.
bool read_frame(int fd, Bytes& body) {
  std::uint64_t n = 0;
  if (!read_all(fd, reinterpret_cast<std::uint8_t*>(&n), sizeof n)) return false;
  body.resize(n);
  return read_all(fd, body.data(), body.size());
}

void put_all(ByteWriter& w, const std::vector<Bytes>& v) {
  w.put<std::uint64_t>(v.size());
  for (const Bytes& b : v) w.put_bytes(b);
}

std::vector<Bytes> get_all(ByteReader& r) {
  std::vector<Bytes> v(r.get<std::uint64_t>());
  for (Bytes& b : v) b = r.get_bytes();
  return v;
}

ByteWriter request(Op op) {
  ByteWriter w;
  w.put(op);
  return w;
}

// One request and its reply. The parent is gone or broken if this fails:
// nothing this child computes can reach the other ranks any more.
Bytes round_trip(int fd, ByteWriter& request) {
  Bytes reply;
  if (!write_frame(fd, request.take()) || !read_frame(fd, reply)) std::_Exit(1);
  return reply;
}

template <typename T>
T scalar_call(int fd, Op op, T value) {
  ByteWriter w = request(op);
  w.put(value);
  const Bytes reply = round_trip(fd, w);
  ByteReader r(reply);
  return r.get<T>();
}

// A request with one byte string whose reply is one per rank.
std::vector<Bytes> gathering_call(int fd, Op op, const Bytes& mine) {
  ByteWriter w = request(op);
  w.put_bytes(mine);
  const Bytes reply = round_trip(fd, w);
  ByteReader r(reply);
  return get_all(r);
}

}  // namespace

double ChildRanks::min_all(double value) {
  return scalar_call(fd_, Op::kMin, value);
}

std::uint64_t ChildRanks::max_all(std::uint64_t value) {
  return scalar_call(fd_, Op::kMax, value);
}

std::vector<Bytes> ChildRanks::exchange(std::vector<Bytes> to_each) {
  ByteWriter w = request(Op::kExchange);
  put_all(w, to_each);
  const Bytes reply = round_trip(fd_, w);
  ByteReader r(reply);
  return get_all(r);
}

std::vector<Bytes> ChildRanks::all_gather(const Bytes& mine) {
  return gathering_call(fd_, Op::kAllGather, mine);
}

std::vector<Bytes> ChildRanks::gather(const Bytes& mine) {
  return gathering_call(fd_, Op::kGather, mine);
}

Bytes ChildRanks::broadcast(const Bytes& value) {
  ByteWriter w = request(Op::kBroadcast);
  w.put_bytes(value);
  const Bytes reply = round_trip(fd_, w);
  ByteReader r(reply);
  return r.get_bytes();
}

void ChildRanks::abort(int exit_code) {
  ByteWriter w = request(Op::kAbort);
  w.put<std::int32_t>(exit_code);
  (void)write_frame(fd_, w.take());
  std::_Exit(exit_code);  // the parent ends every rank; this child is done either way
}

bool serve_child_request(int fd, Ranks& real) {
  Bytes body;
  if (!read_frame(fd, body)) return false;
  ByteReader r(body);
  const Op op = r.get<Op>();
  if (op == Op::kAbort) real.abort(r.get<std::int32_t>());
  ByteWriter reply;
  switch (op) {
    case Op::kMin:
      reply.put(real.min_all(r.get<double>()));
      break;
    case Op::kMax:
      reply.put(real.max_all(r.get<std::uint64_t>()));
      break;
    case Op::kExchange:
      put_all(reply, real.exchange(get_all(r)));
      break;
    case Op::kAllGather:
      put_all(reply, real.all_gather(r.get_bytes()));
      break;
    case Op::kGather:
      put_all(reply, real.gather(r.get_bytes()));
      break;
    case Op::kBroadcast:
      reply.put_bytes(real.broadcast(r.get_bytes()));
      break;
    default:
      real.abort(1);  // not a request this build sends: the channel is corrupt
  }
  return write_frame(fd, reply.take());
}

void replace_world(std::unique_ptr<Ranks> ranks) {
  replaced_world() = std::move(ranks);
}

}  // namespace tpuemu::dist

#include "memory/dma_port.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tpuemu::memory {

DmaPort::DmaPort(double bytes_per_cycle, double latency_cycles, std::uint64_t chunk_bytes)
    : bytes_per_cycle_(bytes_per_cycle), latency_(latency_cycles), chunk_(chunk_bytes) {}

DmaPort::TransferId DmaPort::start(double ready, std::uint64_t bytes, std::uint32_t source) {
  advance_to(ready);
  const TransferId id = next_id_++;
  done_.push_back(std::numeric_limits<double>::quiet_NaN());
  if (bytes == 0) {
    set_done(id, std::max(ready, time_) + latency_);
    return id;
  }
  bytes_ += bytes;
  const Active transfer{id, ready, bytes, source};
  const auto joins_before = [](const Active& a, const Active& b) {
    return a.ready < b.ready || (a.ready == b.ready && a.source < b.source);
  };
  if (ready <= horizon_ && (deferred_.empty() || joins_before(transfer, deferred_.front()))) {
    active_.push_back(transfer);  // served up to `ready`: its place now
    return id;
  }
  // Served only up to the horizon, or behind transfers waiting to join: it
  // joins in (ready, source) order, after those with the same key.
  deferred_.insert(std::upper_bound(deferred_.begin(), deferred_.end(), transfer, joins_before), transfer);
  return id;
}

double DmaPort::next_start() const {
  double earliest = std::numeric_limits<double>::infinity();
  for (const auto& a : active_) {
    if (a.ready <= time_) return time_;
    earliest = std::min(earliest, a.ready);
  }
  return earliest;
}

void DmaPort::join_deferred(double before) {
  while (!deferred_.empty()) {
    const double ready = deferred_.front().ready;
    if (ready > next_start() || ready >= before) return;
    active_.push_back(deferred_.front());
    deferred_.pop_front();
  }
}

DmaPort::Estimate DmaPort::estimate(TransferId id) {
  if (std::isinf(horizon_)) return {completion(id), true};
  advance_to(horizon_);
  if (const auto done = completed_at(id)) return {*done, true};
  DmaPort copy(*this);
  copy.on_chunk = nullptr;
  copy.horizon_ = std::numeric_limits<double>::infinity();
  copy.bounded_ = false;
  return {copy.completion(id), false};
}

bool DmaPort::serve_one() {
  join_deferred(std::numeric_limits<double>::infinity());
  if (active_.empty()) return false;
  // The first transfer in rotation order that is ready; if none is, the port
  // idles until the earliest becomes ready.
  double earliest = std::numeric_limits<double>::infinity();
  std::size_t pick = active_.size();
  for (std::size_t i = 0; i < active_.size(); ++i) {
    if (active_[i].ready <= time_) {
      pick = i;
      break;
    }
    earliest = std::min(earliest, active_[i].ready);
  }
  if (pick == active_.size()) {
    time_ = earliest;
    for (std::size_t i = 0; i < active_.size(); ++i) {
      if (active_[i].ready <= time_) {
        pick = i;
        break;
      }
    }
  }
  Active a = active_[pick];
  if (pick == 0) {
    active_.pop_front();  // the usual case: the rotation's head
  } else {
    active_.erase(active_.begin() + static_cast<std::ptrdiff_t>(pick));
  }
  serve_chunk(a);
  if (a.remaining == 0) {
    set_done(a.id, time_ + latency_);
  } else {
    active_.push_back(a);  // back of the rotation
  }
  return true;
}

void DmaPort::serve_chunk(Active& a) {
  const std::uint64_t n = std::min(chunk_, a.remaining);
  const double duration = static_cast<double>(n) / bytes_per_cycle_;
  if (on_chunk) on_chunk(time_, time_ + duration, n);
  time_ += duration;
  busy_ += duration;
  a.remaining -= n;
}

void DmaPort::advance_to(double cycle) {
  cycle = std::min(cycle, horizon_);
  // No chunk starts before the port is free: nothing to serve.
  if (time_ >= cycle) return;
  for (;;) {
    join_deferred(cycle);
    if (active_.empty()) break;
    if (active_.size() == 1 && deferred_.empty()) {
      // One transfer: its chunks back to back, as serve_one would serve them
      // (the same additions in the same order), without the rotation.
      Active& a = active_.front();
      if (a.ready > time_) {
        if (a.ready >= cycle) return;
        time_ = a.ready;
      }
      do {
        serve_chunk(a);
      } while (a.remaining != 0 && time_ < cycle);
      if (a.remaining == 0) {
        set_done(a.id, time_ + latency_);
        active_.pop_front();
      }
      return;
    }
    if (next_start() >= cycle) break;
    serve_one();
  }
}

double DmaPort::completion(TransferId id) {
  for (;;) {
    if (const auto done = completed_at(id)) return *done;
    if (!serve_one()) return time_;  // unknown id: nothing to wait for
  }
}

std::optional<double> DmaPort::completed_at(TransferId id) const {
  if (id < first_id_ || id - first_id_ >= done_.size()) return std::nullopt;
  const double t = done_[id - first_id_];
  if (std::isnan(t) || std::isinf(t)) return std::nullopt;
  return t;
}

double DmaPort::completion_lower_bound(TransferId id) const {
  if (const auto done = completed_at(id)) return *done;
  for (const Active& a : active_) {
    if (a.id == id) return std::max(time_, a.ready) + latency_;
  }
  for (const Active& a : deferred_) {
    if (a.id == id) return std::max(time_, a.ready) + latency_;
  }
  return time_;  // unknown or forgotten: no later bound is known
}

void DmaPort::forget(TransferId id) {
  if (id < first_id_ || id - first_id_ >= done_.size()) return;
  done_[id - first_id_] = -std::numeric_limits<double>::infinity();
  while (!done_.empty() && std::isinf(done_.front())) {
    done_.pop_front();
    ++first_id_;
  }
}

}  // namespace tpuemu::memory

// Whole-program equality for the fuzz targets: Program::operator== plus what
// it leaves out (name, files, comments, locs, source positions), all of which
// a .tpub image must preserve.
#pragma once

#include "isa/program.hpp"

namespace tpuemu::fuzz {

inline bool same_source(const isa::SourceLoc& a, const isa::SourceLoc& b) {
  return a.file == b.file && a.line == b.line && a.column == b.column;
}

inline bool same_program(const isa::Program& a, const isa::Program& b) {
  if (!(a == b) || a.name != b.name || a.files != b.files) return false;
  for (std::size_t i = 0; i < a.bundles.size(); ++i) {
    const isa::Bundle& x = a.bundles[i];
    const isa::Bundle& y = b.bundles[i];
    if (x.comment != y.comment || !same_source(x.source, y.source)) return false;
    for (std::size_t k = 0; k < x.ops.size(); ++k) {
      const isa::Op& p = x.ops[k];
      const isa::Op& q = y.ops[k];
      if (p.comment != q.comment || p.loc != q.loc || !same_source(p.source, q.source)) return false;
    }
  }
  return true;
}

}  // namespace tpuemu::fuzz

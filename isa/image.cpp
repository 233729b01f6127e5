#include "isa/image.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <iterator>
#include <limits>
#include <string_view>
#include <unordered_map>

#include "common/input_file.hpp"

namespace tpuemu::isa {
namespace {

// Enums are written as their enumerators' values. These pin the values, so
// reordering an enum breaks the build instead of misreading existing images.
static_assert(static_cast<int>(RegClass::kScalar) == 0 && static_cast<int>(RegClass::kVector) == 1 &&
              static_cast<int>(RegClass::kMask) == 2 && static_cast<int>(RegClass::kPredicate) == 3);
static_assert(static_cast<int>(Operand::Kind::kReg) == 0 && static_cast<int>(Operand::Kind::kToken) == 1 &&
              static_cast<int>(Operand::Kind::kInt) == 2 && static_cast<int>(Operand::Kind::kFloat) == 3 &&
              static_cast<int>(Operand::Kind::kSymbol) == 4 && static_cast<int>(Operand::Kind::kMem) == 5 &&
              static_cast<int>(Operand::Kind::kAttr) == 6 && static_cast<int>(Operand::Kind::kChunk) == 7 &&
              static_cast<int>(Operand::Kind::kFlag) == 8 && static_cast<int>(Operand::Kind::kTarget) == 9 &&
              static_cast<int>(Operand::Kind::kDecl) == 10);
static_assert(static_cast<int>(Op::DestKind::kNone) == 0 && static_cast<int>(Op::DestKind::kReg) == 1 &&
              static_cast<int>(Op::DestKind::kToken) == 2);
static_assert(static_cast<int>(MemRef::Space::kVmem) == 0 && static_cast<int>(MemRef::Space::kSmem) == 1);
static_assert(static_cast<int>(MemorySpace::kHbm) == 0 && static_cast<int>(MemorySpace::kVmem) == 1 &&
              static_cast<int>(MemorySpace::kSmem) == 2 && static_cast<int>(MemorySpace::kSflag) == 3);

constexpr std::array<std::uint8_t, 4> kMagic{'T', 'P', 'U', 'B'};
constexpr std::size_t kHeaderBytes = 60;

// Fixed or minimum encoded sizes (docs/tpub.md), used to bound every count by
// the bytes left before anything is allocated for it.
constexpr std::size_t kMinStringBytes = 4;
constexpr std::size_t kAllocationBytes = 30;
constexpr std::size_t kMinBundleBytes = 13;
constexpr std::size_t kMinOpBytes = 9;
constexpr std::size_t kMinOperandBytes = 9;
constexpr std::size_t kFileEntryBytes = 4;
constexpr std::size_t kBundleDebugBytes = 16;
constexpr std::size_t kOpDebugBytes = 20;

// Bits of the flag bytes.
constexpr std::uint8_t kBundleHasAddress = 1U << 0;
constexpr std::uint8_t kBundleInLoop = 1U << 1;
constexpr std::uint8_t kAllocationSpill = 1U << 0;
constexpr std::uint8_t kAllocationHasOffset = 1U << 1;
constexpr std::uint8_t kGuardPresent = 1U << 0;
constexpr std::uint8_t kGuardNegated = 1U << 1;
constexpr std::uint8_t kGuardFallback = 1U << 2;
constexpr std::uint8_t kMemBaseReg = 1U << 0;
constexpr std::uint8_t kMemBaseSymbol = 1U << 1;
constexpr std::uint8_t kMemSublaneStride = 1U << 2;
constexpr std::uint8_t kMemSublaneMask = 1U << 3;
constexpr std::uint8_t kMemSublaneMaskReg = 1U << 4;

enum class SectionId : std::size_t { kStrings, kAllocations, kBundles, kDebug };
constexpr std::array<std::string_view, 4> kSectionNames{"string table", "allocation table", "bundle section",
                                                        "debug line table"};

// ---- encoding ----

class ByteWriter {
 public:
  void u8(std::uint8_t v) { bytes_.push_back(v); }
  void u16(std::uint16_t v) { put(v, 2); }
  void u32(std::uint32_t v) { put(v, 4); }
  void u64(std::uint64_t v) { put(v, 8); }
  void i32(std::int32_t v) { u32(static_cast<std::uint32_t>(v)); }
  void i64(std::int64_t v) { u64(static_cast<std::uint64_t>(v)); }
  void bytes(std::string_view s) { bytes_.insert(bytes_.end(), s.begin(), s.end()); }
  void append(const ByteWriter& other) { bytes_.insert(bytes_.end(), other.bytes_.begin(), other.bytes_.end()); }
  [[nodiscard]] std::size_t size() const { return bytes_.size(); }
  std::vector<std::uint8_t> take() { return std::move(bytes_); }

 private:
  void put(std::uint64_t v, int width) {
    for (int i = 0; i < width; ++i) bytes_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  std::vector<std::uint8_t> bytes_;
};

std::uint32_t checked_u32(std::size_t n, std::string_view what) {
  if (n > std::numeric_limits<std::uint32_t>::max()) {
    throw ImageError(fmt::format("cannot encode program image: {} ({}) exceeds the format's 32-bit limit", what, n));
  }
  return static_cast<std::uint32_t>(n);
}

class Encoder {
 public:
  std::vector<std::uint8_t> run(const Program& program) {
    intern("");  // index 0, so default fields cost no table entry
    const std::uint32_t name = intern(program.name);

    ByteWriter allocations;
    for (const Allocation& a : program.allocations) allocation(allocations, a);

    ByteWriter bundles;
    for (const Bundle& b : program.bundles) bundle(bundles, b);

    ByteWriter debug;
    for (const std::string& file : program.files) debug.u32(intern(file));
    for (const Bundle& b : program.bundles) {
      source(debug, b.source);
      debug.u32(intern(b.comment));
      for (const Op& o : b.ops) {
        source(debug, o.source);
        debug.u32(intern(o.comment));
        debug.u32(intern(o.loc));
      }
    }

    ByteWriter strings;
    for (const std::string* s : strings_) {
      strings.u32(checked_u32(s->size(), "string length"));
      strings.bytes(*s);
    }

    struct Layout {
      std::size_t count;
      const ByteWriter* body;
    };
    const std::array<Layout, 4> sections{
        Layout{strings_.size(), &strings}, Layout{program.allocations.size(), &allocations},
        Layout{program.bundles.size(), &bundles}, Layout{program.files.size(), &debug}};
    ByteWriter image;
    for (const std::uint8_t c : kMagic) image.u8(c);
    image.u16(kImageVersion);
    image.u16(0);  // flags: none defined in version 1
    image.u32(name);
    std::size_t offset = kHeaderBytes;
    for (std::size_t i = 0; i < sections.size(); ++i) {
      image.u32(checked_u32(sections[i].count, kSectionNames[i]));
      image.u32(checked_u32(offset, "image size"));
      image.u32(checked_u32(sections[i].body->size(), kSectionNames[i]));
      offset += sections[i].body->size();
    }
    checked_u32(offset, "image size");
    for (const Layout& s : sections) image.append(*s.body);
    return image.take();
  }

 private:
  std::uint32_t intern(const std::string& s) {
    const auto [it, inserted] = index_.try_emplace(s, static_cast<std::uint32_t>(strings_.size()));
    if (inserted) {
      checked_u32(strings_.size() + 1, "string count");
      strings_.push_back(&it->first);  // map keys do not move
    }
    return it->second;
  }

  static void source(ByteWriter& w, const SourceLoc& loc) {
    w.u32(loc.file);
    w.u32(loc.line);
    w.u32(loc.column);
  }

  static void reg(ByteWriter& w, const Reg& r) {
    w.u8(static_cast<std::uint8_t>(r.cls));
    w.u16(r.index);
    w.i32(r.ssa);
  }

  static void symbol(ByteWriter& w, const SymbolRef& s) {
    w.u32(s.allocation);
    w.u8(s.spill ? 1 : 0);
    w.i64(s.offset);
  }

  void allocation(ByteWriter& w, const Allocation& a) {
    w.u32(a.id);
    w.u8(static_cast<std::uint8_t>((a.spill ? kAllocationSpill : 0) | (a.offset ? kAllocationHasOffset : 0)));
    w.u8(static_cast<std::uint8_t>(a.space));
    w.u64(a.size);
    w.u64(a.offset.value_or(0));
    w.u32(intern(a.shape));
    w.u32(intern(a.tag));
  }

  void bundle(ByteWriter& w, const Bundle& b) {
    w.u8(static_cast<std::uint8_t>((b.address ? kBundleHasAddress : 0) | (b.in_loop ? kBundleInLoop : 0)));
    w.u32(b.address.value_or(0));
    w.u32(intern(b.tag));
    w.u32(checked_u32(b.ops.size(), "ops in a bundle"));
    for (const Op& o : b.ops) op(w, o);
  }

  void op(ByteWriter& w, const Op& o) {
    w.u16(static_cast<std::uint16_t>(o.opcode));
    w.u8(o.unit);
    w.u8(static_cast<std::uint8_t>(o.dest_kind));
    if (o.dest_kind == Op::DestKind::kReg) reg(w, o.dest_reg);
    if (o.dest_kind == Op::DestKind::kToken) w.u32(o.dest_token);
    w.u8(static_cast<std::uint8_t>((o.guard ? kGuardPresent : 0) | (o.guard_negated ? kGuardNegated : 0) |
                                   (o.guard_fallback ? kGuardFallback : 0)));
    if (o.guard) reg(w, *o.guard);
    if (o.guard_fallback) reg(w, *o.guard_fallback);
    w.u32(checked_u32(o.operands.size(), "operands of an op"));
    for (const Operand& x : o.operands) operand(w, x);
  }

  void operand(ByteWriter& w, const Operand& o) {
    w.u8(static_cast<std::uint8_t>(o.kind));
    w.u32(intern(o.name));
    switch (o.kind) {
      case Operand::Kind::kReg:
        reg(w, o.reg);
        break;
      case Operand::Kind::kToken:
        w.u32(o.token);
        break;
      case Operand::Kind::kInt:
        w.i64(o.integer);
        break;
      case Operand::Kind::kFloat:
        w.u32(o.float_bits);
        break;
      case Operand::Kind::kSymbol:
        symbol(w, o.symbol);
        break;
      case Operand::Kind::kMem: {
        const MemRef& m = o.mem;
        w.u8(static_cast<std::uint8_t>(m.space));
        w.u8(static_cast<std::uint8_t>((m.base_reg ? kMemBaseReg : 0) | (m.base_symbol ? kMemBaseSymbol : 0) |
                                       (m.sublane_stride ? kMemSublaneStride : 0) |
                                       (m.sublane_mask ? kMemSublaneMask : 0) |
                                       (m.sublane_mask_reg ? kMemSublaneMaskReg : 0)));
        w.i64(m.offset);
        if (m.base_reg) reg(w, *m.base_reg);
        if (m.base_symbol) symbol(w, *m.base_symbol);
        if (m.sublane_stride) w.u32(*m.sublane_stride);
        if (m.sublane_mask) w.u32(*m.sublane_mask);
        if (m.sublane_mask_reg) reg(w, *m.sublane_mask_reg);
        break;
      }
      case Operand::Kind::kAttr:
      case Operand::Kind::kFlag:
        w.u32(intern(o.text));
        break;
      case Operand::Kind::kChunk:
        w.i64(o.integer);
        w.u32(o.chunk_count);
        break;
      case Operand::Kind::kTarget:
        w.u32(o.target.bundleno);
        w.i32(o.target.region);
        w.u32(intern(o.text));
        break;
      case Operand::Kind::kDecl:
        w.u32(intern(o.decl.shape));
        w.u32(o.decl.index);
        w.u32(intern(o.decl.kind));
        w.u32(intern(o.decl.shape_index));
        break;
    }
  }

  std::unordered_map<std::string, std::uint32_t> index_;
  std::vector<const std::string*> strings_;  // in index order
};

// ---- decoding ----

class Decoder;

// Reads one region of the image front to back; every read first checks that
// the region has the bytes left, so nothing is read outside it.
class Cursor {
 public:
  Cursor(const Decoder& decoder, std::string_view region, std::size_t begin, std::size_t end)
      : decoder_(decoder), region_(region), pos_(begin), end_(end) {}

  std::uint8_t u8(std::string_view what) { return static_cast<std::uint8_t>(take(1, what)); }
  std::uint16_t u16(std::string_view what) { return static_cast<std::uint16_t>(take(2, what)); }
  std::uint32_t u32(std::string_view what) { return static_cast<std::uint32_t>(take(4, what)); }
  std::uint64_t u64(std::string_view what) { return take(8, what); }
  std::int32_t i32(std::string_view what) { return static_cast<std::int32_t>(u32(what)); }
  std::int64_t i64(std::string_view what) { return static_cast<std::int64_t>(u64(what)); }
  // The next `n` bytes as text; the caller has checked n <= left().
  std::string text(std::size_t n);

  [[nodiscard]] std::size_t pos() const { return pos_; }
  [[nodiscard]] std::size_t left() const { return end_ - pos_; }
  [[nodiscard]] std::string_view region() const { return region_; }
  // Requires the region to be consumed exactly.
  void finish() const;

 private:
  std::uint64_t take(std::size_t width, std::string_view what);

  const Decoder& decoder_;
  std::string_view region_;
  std::size_t pos_;
  std::size_t end_;
};

class Decoder {
 public:
  Decoder(std::span<const std::uint8_t> bytes, const std::string& origin)
      : bytes_(bytes), origin_(origin), string_budget_(kImageStringExpansion * bytes.size() + kImageStringSlack) {}

  [[noreturn]] void fail(std::size_t offset, std::string_view what) const {
    throw ImageError(fmt::format("{}: {} at byte offset {}", origin_, what, offset));
  }
  [[nodiscard]] std::span<const std::uint8_t> bytes() const { return bytes_; }

  Program run() {
    Program program;
    const std::size_t name_at = header();
    strings();
    Cursor name(*this, "header", name_at, name_at + 4);
    program.name = string_ref(name, "program name");
    allocations(program);
    bundles(program);
    debug(program);
    return program;
  }

 private:
  struct Section {
    std::uint32_t count = 0;
    std::size_t begin = 0;
    std::size_t end = 0;
    std::size_t descriptor = 0;  // where its count is in the header
  };

  Section& section(SectionId id) { return sections_[static_cast<std::size_t>(id)]; }
  Cursor cursor(SectionId id) {
    const Section& s = section(id);
    return Cursor(*this, kSectionNames[static_cast<std::size_t>(id)], s.begin, s.end);
  }

  // Checks the magic, the version and the section table; returns the offset
  // of the program name's string index.
  std::size_t header() {
    const std::size_t magic_bytes = std::min(bytes_.size(), kMagic.size());
    if (!std::equal(bytes_.begin(), bytes_.begin() + static_cast<std::ptrdiff_t>(magic_bytes), kMagic.begin())) {
      fail(0, "not a tpuemu program image (.tpub): the magic bytes are not \"TPUB\"");
    }
    Cursor h(*this, "header", 0, bytes_.size());
    h.u32("magic");
    const std::size_t version_at = h.pos();
    const std::uint16_t version = h.u16("format version");
    if (version > kImageVersion) {
      fail(version_at, fmt::format("image format version {} is newer than this tpuemu supports (version {})", version,
                                   kImageVersion));
    }
    if (version != kImageVersion) {
      fail(version_at,
           fmt::format("unknown image format version {} (this tpuemu reads version {})", version, kImageVersion));
    }
    if (bytes_.size() < kHeaderBytes) {
      fail(bytes_.size(),
           fmt::format("truncated header: the image is {} bytes, a header is {}", bytes_.size(), kHeaderBytes));
    }
    const std::size_t flags_at = h.pos();
    if (const std::uint16_t flags = h.u16("flags"); flags != 0) {
      fail(flags_at, fmt::format("unknown flags 0x{:04x} (version {} defines none)", flags, kImageVersion));
    }
    const std::size_t name_at = h.pos();
    h.u32("program name");
    for (std::size_t i = 0; i < sections_.size(); ++i) {
      Section& s = sections_[i];
      s.descriptor = h.pos();
      s.count = h.u32("section count");
      const std::size_t offset_at = h.pos();
      const std::uint64_t offset = h.u32("section offset");
      const std::uint64_t size = h.u32("section size");
      if (offset < kHeaderBytes || offset + size > bytes_.size()) {
        fail(offset_at, fmt::format("{} of {} bytes at offset {} lies outside the image (bytes {}..{})",
                                    kSectionNames[i], size, offset, kHeaderBytes, bytes_.size()));
      }
      s.begin = static_cast<std::size_t>(offset);
      s.end = static_cast<std::size_t>(offset + size);
    }
    return name_at;
  }

  // Fails unless `count` records of at least `min_bytes` each fit in the bytes
  // the cursor has left.
  void check_fits(std::uint64_t count, std::size_t min_bytes, std::string_view what, const Cursor& c,
                  std::size_t count_at) const {
    if (count > c.left() / min_bytes) {
      fail(count_at, fmt::format("{} {} need at least {} bytes, the {} has {} left", count, what, count * min_bytes,
                                 c.region(), c.left()));
    }
  }

  std::uint32_t count(Cursor& c, std::string_view what, std::size_t min_bytes) {
    const std::size_t at = c.pos();
    const std::uint32_t n = c.u32(what);
    check_fits(n, min_bytes, what, c, at);
    return n;
  }

  const std::string& string_ref(Cursor& c, std::string_view what) {
    const std::size_t at = c.pos();
    const std::uint32_t index = c.u32(what);
    if (index >= strings_.size()) {
      fail(at, fmt::format("{}: string index {} out of range (the string table has {} entries)", what, index,
                           strings_.size()));
    }
    const std::string& s = strings_[index];
    if (s.size() > string_budget_) {
      fail(at, fmt::format("{}: the strings the image refers to add up to more than {} bytes ({} per image byte)", what,
                           kImageStringExpansion * bytes_.size() + kImageStringSlack, kImageStringExpansion));
    }
    string_budget_ -= s.size();
    return s;
  }

  std::uint8_t flag_bits(Cursor& c, std::string_view what, std::uint8_t known) {
    const std::size_t at = c.pos();
    const std::uint8_t v = c.u8(what);
    if ((v & ~known) != 0) fail(at, fmt::format("{}: unknown bits 0x{:02x}", what, v & ~known));
    return v;
  }

  bool boolean(Cursor& c, std::string_view what) {
    const std::size_t at = c.pos();
    const std::uint8_t v = c.u8(what);
    if (v > 1) fail(at, fmt::format("{}: {} is not a boolean (0 or 1)", what, v));
    return v == 1;
  }

  template <class Enum>
  Enum enum_value(Cursor& c, std::string_view what, Enum last) {
    const std::size_t at = c.pos();
    const std::uint8_t v = c.u8(what);
    if (v > static_cast<std::uint8_t>(last)) {
      fail(at, fmt::format("{} {} is not one of 0..{}", what, v, static_cast<int>(last)));
    }
    return static_cast<Enum>(v);
  }

  void strings() {
    const Section& s = section(SectionId::kStrings);
    Cursor c = cursor(SectionId::kStrings);
    check_fits(s.count, kMinStringBytes, "strings", c, s.descriptor);
    strings_.reserve(s.count);
    for (std::uint32_t i = 0; i < s.count; ++i) {
      const std::size_t at = c.pos();
      const std::uint32_t length = c.u32("string length");
      if (length > c.left()) {
        fail(at, fmt::format("string {} of {} bytes runs past the end of the string table ({} bytes left)", i, length,
                             c.left()));
      }
      strings_.push_back(c.text(length));
    }
    c.finish();
  }

  void allocations(Program& program) {
    const Section& s = section(SectionId::kAllocations);
    Cursor c = cursor(SectionId::kAllocations);
    check_fits(s.count, kAllocationBytes, "allocations", c, s.descriptor);
    program.allocations.reserve(s.count);
    for (std::uint32_t i = 0; i < s.count; ++i) {
      Allocation& a = program.allocations.emplace_back();
      a.id = c.u32("allocation id");
      const std::uint8_t flags = flag_bits(c, "allocation flags", kAllocationSpill | kAllocationHasOffset);
      a.spill = (flags & kAllocationSpill) != 0;
      a.space = enum_value(c, "memory space", MemorySpace::kSflag);
      a.size = c.u64("allocation size");
      const std::uint64_t offset = c.u64("allocation offset");
      if ((flags & kAllocationHasOffset) != 0) a.offset = offset;
      a.shape = string_ref(c, "allocation shape");
      a.tag = string_ref(c, "allocation tag");
    }
    c.finish();
  }

  void bundles(Program& program) {
    const Section& s = section(SectionId::kBundles);
    Cursor c = cursor(SectionId::kBundles);
    check_fits(s.count, kMinBundleBytes, "bundles", c, s.descriptor);
    program.bundles.reserve(s.count);
    for (std::uint32_t i = 0; i < s.count; ++i) {
      Bundle& b = program.bundles.emplace_back();
      const std::uint8_t flags = flag_bits(c, "bundle flags", kBundleHasAddress | kBundleInLoop);
      const std::uint32_t address = c.u32("bundle address");
      if ((flags & kBundleHasAddress) != 0) b.address = address;
      b.in_loop = (flags & kBundleInLoop) != 0;
      b.tag = string_ref(c, "bundle tag");
      const std::uint32_t ops = count(c, "ops", kMinOpBytes);
      b.ops.reserve(ops);
      for (std::uint32_t k = 0; k < ops; ++k) b.ops.push_back(op(c));
      op_total_ += ops;
    }
    c.finish();
  }

  Reg reg(Cursor& c) {
    Reg r;
    r.cls = enum_value(c, "register class", RegClass::kPredicate);
    r.index = c.u16("register index");
    r.ssa = c.i32("register SSA value");
    return r;
  }

  SymbolRef symbol(Cursor& c) {
    SymbolRef s;
    s.allocation = c.u32("allocation number");
    s.spill = boolean(c, "spill marker");
    s.offset = c.i64("allocation offset");
    return s;
  }

  Op op(Cursor& c) {
    Op o;
    const std::size_t opcode_at = c.pos();
    const std::uint16_t opcode = c.u16("opcode");
    if (opcode >= op_count()) {
      fail(opcode_at, fmt::format("opcode {} is not in the instruction table ({} rows)", opcode, op_count()));
    }
    o.opcode = static_cast<OpId>(opcode);
    o.unit = c.u8("unit index");
    o.dest_kind = enum_value(c, "destination kind", Op::DestKind::kToken);
    if (o.dest_kind == Op::DestKind::kReg) o.dest_reg = reg(c);
    if (o.dest_kind == Op::DestKind::kToken) o.dest_token = c.u32("destination token");
    const std::uint8_t guard = flag_bits(c, "guard flags", kGuardPresent | kGuardNegated | kGuardFallback);
    o.guard_negated = (guard & kGuardNegated) != 0;
    if ((guard & kGuardPresent) != 0) o.guard = reg(c);
    if ((guard & kGuardFallback) != 0) o.guard_fallback = reg(c);
    const std::uint32_t operands = count(c, "operands", kMinOperandBytes);
    o.operands.reserve(operands);
    for (std::uint32_t i = 0; i < operands; ++i) o.operands.push_back(operand(c));
    return o;
  }

  Operand operand(Cursor& c) {
    Operand o;
    o.kind = enum_value(c, "operand kind", Operand::Kind::kDecl);
    o.name = string_ref(c, "operand name");
    switch (o.kind) {
      case Operand::Kind::kReg:
        o.reg = reg(c);
        break;
      case Operand::Kind::kToken:
        o.token = c.u32("token");
        break;
      case Operand::Kind::kInt:
        o.integer = c.i64("integer");
        break;
      case Operand::Kind::kFloat:
        o.float_bits = c.u32("float bits");
        break;
      case Operand::Kind::kSymbol:
        o.symbol = symbol(c);
        break;
      case Operand::Kind::kMem: {
        MemRef& m = o.mem;
        m.space = enum_value(c, "memory reference space", MemRef::Space::kSmem);
        const std::uint8_t parts =
            flag_bits(c, "memory reference parts",
                      kMemBaseReg | kMemBaseSymbol | kMemSublaneStride | kMemSublaneMask | kMemSublaneMaskReg);
        m.offset = c.i64("memory offset");
        if ((parts & kMemBaseReg) != 0) m.base_reg = reg(c);
        if ((parts & kMemBaseSymbol) != 0) m.base_symbol = symbol(c);
        if ((parts & kMemSublaneStride) != 0) m.sublane_stride = c.u32("sublane stride");
        if ((parts & kMemSublaneMask) != 0) m.sublane_mask = c.u32("sublane mask");
        if ((parts & kMemSublaneMaskReg) != 0) m.sublane_mask_reg = reg(c);
        break;
      }
      case Operand::Kind::kAttr:
      case Operand::Kind::kFlag:
        o.text = string_ref(c, "operand text");
        break;
      case Operand::Kind::kChunk:
        o.integer = c.i64("chunk index");
        o.chunk_count = c.u32("chunk count");
        break;
      case Operand::Kind::kTarget:
        o.target.bundleno = c.u32("target bundle");
        o.target.region = c.i32("target region");
        o.text = string_ref(c, "target label");
        break;
      case Operand::Kind::kDecl:
        o.decl.shape = string_ref(c, "declared shape");
        o.decl.index = c.u32("declared operand index");
        o.decl.kind = string_ref(c, "declared operand kind");
        o.decl.shape_index = string_ref(c, "declared shape index");
        break;
    }
    return o;
  }

  void source(Cursor& c, SourceLoc& loc) {
    loc.file = c.u32("file index");
    loc.line = c.u32("line");
    loc.column = c.u32("column");
  }

  void debug(Program& program) {
    const Section& s = section(SectionId::kDebug);
    Cursor c = cursor(SectionId::kDebug);
    const std::uint64_t expected = std::uint64_t{s.count} * kFileEntryBytes +
                                   std::uint64_t{program.bundles.size()} * kBundleDebugBytes +
                                   op_total_ * kOpDebugBytes;
    if (c.left() != expected) {
      fail(s.descriptor, fmt::format("debug line table is {} bytes, but {} files, {} bundles and {} ops need {}",
                                     c.left(), s.count, program.bundles.size(), op_total_, expected));
    }
    program.files.reserve(s.count);
    for (std::uint32_t i = 0; i < s.count; ++i) program.files.push_back(string_ref(c, "file name"));
    for (Bundle& b : program.bundles) {
      source(c, b.source);
      b.comment = string_ref(c, "bundle comment");
      for (Op& o : b.ops) {
        source(c, o.source);
        o.comment = string_ref(c, "op comment");
        o.loc = string_ref(c, "op loc");
      }
    }
    c.finish();
  }

  std::span<const std::uint8_t> bytes_;
  const std::string& origin_;
  std::array<Section, 4> sections_{};
  std::vector<std::string> strings_;
  std::uint64_t string_budget_;
  std::uint64_t op_total_ = 0;
};

std::uint64_t Cursor::take(std::size_t width, std::string_view what) {
  if (left() < width) {
    decoder_.fail(pos_, fmt::format("truncated {}: {} needs {} bytes, {} left", region_, what, width, left()));
  }
  const auto bytes = decoder_.bytes();
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < width; ++i) v |= std::uint64_t{bytes[pos_ + i]} << (8 * i);
  pos_ += width;
  return v;
}

std::string Cursor::text(std::size_t n) {
  const auto bytes = decoder_.bytes().subspan(pos_, n);
  pos_ += n;
  return {bytes.begin(), bytes.end()};
}

void Cursor::finish() const {
  if (left() != 0) decoder_.fail(pos_, fmt::format("{} unread bytes at the end of the {}", left(), region_));
}

}  // namespace

std::vector<std::uint8_t> encode_image(const Program& program) {
  return Encoder().run(program);
}

Program decode_image(std::span<const std::uint8_t> bytes, const std::string& origin) {
  return Decoder(bytes, origin).run();
}

void write_image(const std::string& path, const Program& program) {
  const std::vector<std::uint8_t> image = encode_image(program);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw ImageError(fmt::format("{}: cannot open file for writing", path));
  out.write(reinterpret_cast<const char*>(image.data()), static_cast<std::streamsize>(image.size()));
  out.close();
  if (!out) throw ImageError(fmt::format("{}: cannot write file", path));
}

Program read_image(const std::string& path) {
  std::string bytes;
  try {
    bytes = read_input_file(path, kMaxProgramTextBytes);
  } catch (const InputFileError& e) {
    throw ImageError(e.what());
  }
  const std::vector<std::uint8_t> image(bytes.begin(), bytes.end());
  return decode_image(image, path);
}

}  // namespace tpuemu::isa

#include "isa/assembler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <unordered_map>

#include "common/input_file.hpp"

namespace tpuemu::isa {
namespace {

constexpr std::size_t kMaxDiagnostics = 20;
constexpr int kMaxIncludeDepth = 16;

// Thrown inside the parser for one problem; caught per logical line.
struct LineError {
  std::size_t offset;  // into the logical line
  std::string message;
};

bool is_ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.';
}
bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.' || c == '-' || c == '$';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// A logical line: one or more physical lines joined while a comment, a
// bundle brace or a bracket is open. Offsets map back to (line, column).
struct LogicalLine {
  std::string text;
  struct Segment {
    std::size_t offset;  // where this physical line starts in `text`
    std::uint32_t line;
    std::string physical;
  };
  std::vector<Segment> segments;

  [[nodiscard]] const Segment& segment_at(std::size_t offset) const {
    auto it = std::upper_bound(segments.begin(), segments.end(), offset,
                               [](std::size_t o, const Segment& s) { return o < s.offset; });
    return *(it == segments.begin() ? it : std::prev(it));
  }
};

// Splits source text into logical lines, tracking /* */ nesting, quotes and
// { } so that multi-line DMA descriptors and bundles stay together.
std::vector<LogicalLine> split_logical_lines(std::string_view text) {
  std::vector<LogicalLine> out;
  LogicalLine current;
  int comment_depth = 0;
  int brace_depth = 0;
  std::uint32_t line_no = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    std::string_view physical = text.substr(pos, end - pos);
    if (!physical.empty() && physical.back() == '\r') physical.remove_suffix(1);
    ++line_no;
    if (!current.segments.empty()) current.text += '\n';
    current.segments.push_back({current.text.size(), line_no, std::string(physical)});
    current.text += physical;
    // Scan the physical line for comment/brace state.
    char quote = 0;
    for (std::size_t i = 0; i < physical.size(); ++i) {
      const char c = physical[i];
      const char next = i + 1 < physical.size() ? physical[i + 1] : '\0';
      if (comment_depth > 0) {
        if (c == '/' && next == '*') {
          ++comment_depth;
          ++i;
        } else if (c == '*' && next == '/') {
          --comment_depth;
          ++i;
        }
        continue;
      }
      if (quote != 0) {
        if (c == quote) quote = 0;
        continue;
      }
      if (c == '\'' || c == '"') {
        quote = c;
      } else if (c == '/' && next == '*') {
        ++comment_depth;
        ++i;
      } else if (c == '/' && next == '/') {
        break;  // line comment
      } else if (c == '{') {
        ++brace_depth;
      } else if (c == '}') {
        brace_depth = std::max(0, brace_depth - 1);
      }
    }
    if (comment_depth == 0 && brace_depth == 0) {
      out.push_back(std::move(current));
      current = LogicalLine{};
    }
    if (end >= text.size()) break;
    pos = end + 1;
  }
  if (!current.segments.empty()) out.push_back(std::move(current));  // unterminated: reported by the parser
  return out;
}

// Finds the end of a /* */ comment starting at `pos` (which points at "/*"),
// honouring nesting. Returns the offset just past the closing "*/", or npos.
std::size_t comment_end(std::string_view s, std::size_t pos) {
  int depth = 0;
  for (std::size_t i = pos; i + 1 < s.size(); ++i) {
    if (s[i] == '/' && s[i + 1] == '*') {
      ++depth;
      ++i;
    } else if (s[i] == '*' && s[i + 1] == '/') {
      --depth;
      ++i;
      if (depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

// Matching close for an open bracket/paren at `pos`, skipping comments and quotes.
std::size_t matching_close(std::string_view s, std::size_t pos, char open, char close) {
  int depth = 0;
  for (std::size_t i = pos; i < s.size(); ++i) {
    if (s[i] == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      const std::size_t e = comment_end(s, i);
      if (e == std::string_view::npos) return e;
      i = e - 1;
      continue;
    }
    if (s[i] == '/' && i + 1 < s.size() && s[i + 1] == '/') {  // line comment: skip to the end of its line
      const std::size_t nl = s.find('\n', i);
      if (nl == std::string_view::npos) return nl;
      i = nl;
      continue;
    }
    if (s[i] == '\'') {
      const std::size_t q = s.find('\'', i + 1);
      if (q == std::string_view::npos) return q;
      i = q;
      continue;
    }
    if (s[i] == open) ++depth;
    if (s[i] == close && --depth == 0) return i;
  }
  return std::string_view::npos;
}

std::optional<std::int64_t> parse_integer(std::string_view s) {
  bool negative = false;
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  if (s.empty()) return std::nullopt;
  std::uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  if (v > (1ULL << 62)) return std::nullopt;
  return negative ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v);
}

// Whether `s` is written as an integer (sign, decimal or 0x hex digits),
// whatever its size: parse_integer refuses such a text only for its range.
bool integer_literal(std::string_view s) {
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) s.remove_prefix(1);
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  if (hex) s.remove_prefix(2);
  return !s.empty() && std::all_of(s.begin(), s.end(), [hex](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0 ||
           (hex && std::isxdigit(static_cast<unsigned char>(c)) != 0);
  });
}

// Why parse_integer refused `s`.
std::string integer_error(std::string_view s) {
  if (integer_literal(s)) {
    return fmt::format("'{}' is out of range: integers are at most 2^62 (0x4000000000000000) in magnitude", s);
  }
  return fmt::format("'{}' is not an integer", s);
}

std::optional<float> parse_float(std::string_view s) {
  bool negative = false;
  std::string_view body = s;
  if (!body.empty() && (body.front() == '-' || body.front() == '+')) {
    negative = body.front() == '-';
    body.remove_prefix(1);
  }
  float v = 0;
  if (body == "nan") {
    v = std::numeric_limits<float>::quiet_NaN();
  } else if (body == "inf") {
    v = std::numeric_limits<float>::infinity();
  } else {
    auto [ptr, ec] = std::from_chars(body.data(), body.data() + body.size(), v, std::chars_format::general);
    if (ptr != body.data() + body.size() || body.empty()) return std::nullopt;
    if (ec == std::errc::result_out_of_range) {
      // Denormal or overflowing literals: take the correctly rounded double, then narrow.
      double d = 0;
      auto [p2, ec2] = std::from_chars(body.data(), body.data() + body.size(), d, std::chars_format::general);
      if (p2 != body.data() + body.size() || ec2 != std::errc()) return std::nullopt;
      v = static_cast<float>(d);
    } else if (ec != std::errc()) {
      return std::nullopt;
    }
  }
  return negative ? -v : v;
}

bool looks_like_float(std::string_view s) {
  if (s.starts_with('-') || s.starts_with('+')) s.remove_prefix(1);
  if (s == "nan" || s == "inf") return true;
  if (s.empty() || !(is_digit(s.front()) || s.front() == '.')) return false;
  if (s.starts_with("0x") || s.starts_with("0X")) return false;
  return s.find_first_of(".eE") != std::string_view::npos;
}

std::string strip_comments(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      const std::size_t e = comment_end(s, i);
      if (e == std::string_view::npos) break;
      i = e - 1;
      continue;
    }
    out += s[i];
  }
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Extracts the first loc("...":L:C to :C) from comment text.
std::string extract_loc(std::string_view comment) {
  const auto start = comment.find("loc(");
  if (start == std::string_view::npos) return {};
  int depth = 0;
  for (std::size_t i = start + 3; i < comment.size(); ++i) {
    if (comment[i] == '(') ++depth;
    if (comment[i] == ')' && --depth == 0) return std::string(comment.substr(start, i - start + 1));
  }
  return {};
}

class Assembler {
 public:
  explicit Assembler(const AssembleOptions& options, bool allocations_only = false)
      : options_(options), allocations_only_(allocations_only) {}

  Program run(std::string_view text, const std::string& file_name) {
    program_.name = program_name(file_name);
    process_file(text, file_name, 0);
    resolve_labels();
    place_allocations();
    if (!diagnostics_.empty()) throw AsmError(std::move(diagnostics_));
    return std::move(program_);
  }

 private:
  struct PendingLabelRef {
    std::size_t bundle;
    std::size_t op;
    std::size_t operand;
    std::string label;
    Diagnostic where;
  };

  const AssembleOptions& options_;
  bool allocations_only_;  // read only `#allocation` lines (a post-delay-converter dump's table)
  Program program_;
  std::vector<Diagnostic> diagnostics_;
  std::map<std::string, std::size_t, std::less<>> labels_;  // label -> bundle index
  std::map<std::string, Operand, std::less<>> constants_;
  std::vector<PendingLabelRef> label_refs_;
  std::vector<std::string> include_stack_;

  // Per logical line being parsed.
  const LogicalLine* line_ = nullptr;
  std::uint32_t file_index_ = 0;
  std::string file_name_;

  static std::string program_name(const std::string& file_name) {
    std::string stem = std::filesystem::path(file_name).stem().string();
    // <id>-<kernel>-NN-final_bundles -> <kernel>
    const auto first_dash = stem.find('-');
    const auto suffix = stem.rfind("-final_bundles");
    if (first_dash != std::string::npos && suffix != std::string::npos && suffix > first_dash) {
      std::string middle = stem.substr(first_dash + 1, suffix - first_dash - 1);  // kernel-NN or NN
      const auto last_dash = middle.rfind('-');
      return last_dash == std::string::npos ? std::string("tlp") : middle.substr(0, last_dash);
    }
    return stem;
  }

  Diagnostic make_diagnostic(std::size_t offset, std::string message) const {
    Diagnostic d;
    d.file = file_name_;
    d.message = std::move(message);
    if (line_ != nullptr && !line_->segments.empty()) {
      const auto& seg = line_->segment_at(offset);
      d.line = seg.line;
      d.column = static_cast<std::uint32_t>(offset - seg.offset + 1);
      d.line_text = seg.physical;
    }
    return d;
  }

  void report(std::size_t offset, std::string message) {
    if (diagnostics_.size() < kMaxDiagnostics) diagnostics_.push_back(make_diagnostic(offset, std::move(message)));
  }

  SourceLoc loc_at(std::size_t offset) const {
    SourceLoc l;
    l.file = file_index_;
    if (line_ != nullptr && !line_->segments.empty()) {
      const auto& seg = line_->segment_at(offset);
      l.line = seg.line;
      l.column = static_cast<std::uint32_t>(offset - seg.offset + 1);
    }
    return l;
  }

  void process_file(std::string_view text, const std::string& file_name, int depth) {
    const std::string saved_name = file_name_;
    const std::uint32_t saved_index = file_index_;
    const LogicalLine* saved_line = line_;
    file_name_ = file_name;
    program_.files.push_back(file_name);
    file_index_ = static_cast<std::uint32_t>(program_.files.size() - 1);

    const auto lines = split_logical_lines(text);
    bool in_key_block = false;
    for (const LogicalLine& line : lines) {
      line_ = &line;
      const std::string_view t = trim(line.text);
      if (t.starts_with("= control target key start")) {
        in_key_block = true;
        continue;
      }
      if (t.starts_with("= control target key end")) {
        in_key_block = false;
        continue;
      }
      if (in_key_block) continue;
      try {
        process_line(line.text, depth);
      } catch (const LineError& e) {
        report(e.offset, e.message);
      }
      if (diagnostics_.size() >= kMaxDiagnostics) break;
    }
    line_ = saved_line;
    file_name_ = saved_name;
    file_index_ = saved_index;
  }

  // Classifies and parses one logical line.
  void process_line(std::string_view text, int depth) {
    std::size_t pos = 0;
    skip_space(text, pos);
    if (pos >= text.size()) return;
    const std::string_view rest = text.substr(pos);
    if (allocations_only_) {
      if (rest.starts_with("#allocation")) parse_allocation(text, pos);
      return;
    }
    // Line comments.
    if (rest.starts_with("//") || (rest.starts_with('#') && (rest.size() == 1 || is_space(rest[1])))) return;
    if (rest.starts_with("/*")) {
      const std::size_t e = comment_end(text, pos);
      if (e == std::string_view::npos) throw LineError{pos, "unterminated comment: expected '*/'"};
      const std::string_view after = trim(text.substr(e));
      if (after.empty()) return;
      const std::string blanked =
          std::string(text.substr(0, pos)) + std::string(e - pos, ' ') + std::string(text.substr(e));
      process_line(blanked, depth);
      return;
    }
    if (rest.starts_with(".include")) return parse_include(text, pos + 8, depth);
    if (rest.starts_with(".const")) return parse_const(text, pos + 6);
    if (rest.starts_with('.'))
      throw LineError{pos, fmt::format("unknown directive '{}': expected .include or .const",
                                       rest.substr(0, rest.find_first_of(" \t")))};
    if (rest.starts_with("#allocation")) return parse_allocation(text, pos);
    // A label: identifier followed by ':' and nothing else.
    if (is_ident_start(rest.front()) && !rest.starts_with("0x")) {
      std::size_t e = pos;
      while (e < text.size() && is_ident_char(text[e])) ++e;
      std::size_t after = e;
      skip_space(text, after);
      if (after < text.size() && text[after] == ':') {
        std::size_t tail = after + 1;
        skip_space(text, tail);
        skip_trailing_comments(text, tail);
        if (tail >= text.size()) {
          define_label(std::string(text.substr(pos, e - pos)), pos);
          return;
        }
      }
    }
    parse_bundle_line(text, pos);
  }

  void skip_space(std::string_view s, std::size_t& pos) const {
    while (pos < s.size() && is_space(s[pos])) ++pos;
  }

  void skip_trailing_comments(std::string_view s, std::size_t& pos) const {
    while (pos < s.size()) {
      if (s.substr(pos).starts_with("/*")) {
        const std::size_t e = comment_end(s, pos);
        if (e == std::string_view::npos) throw LineError{pos, "unterminated comment: expected '*/'"};
        pos = e;
      } else if (s.substr(pos).starts_with("//")) {
        pos = s.size();
      } else if (!is_space(s[pos])) {
        return;
      } else {
        ++pos;
      }
    }
  }

  void define_label(std::string name, std::size_t offset) {
    if (labels_.contains(name)) throw LineError{offset, fmt::format("label '{}' is defined twice", name)};
    labels_.emplace(std::move(name), program_.bundles.size());
  }

  void parse_include(std::string_view text, std::size_t pos, int depth) {
    skip_space(text, pos);
    if (pos >= text.size() || text[pos] != '"') throw LineError{pos, "expected a quoted file name after .include"};
    const std::size_t close = text.find('"', pos + 1);
    if (close == std::string_view::npos) throw LineError{pos, "unterminated file name: expected '\"'"};
    const std::string name(text.substr(pos + 1, close - pos - 1));
    if (depth >= kMaxIncludeDepth) throw LineError{pos, "includes nested too deeply (a cycle?)"};
    std::vector<std::filesystem::path> candidates{std::filesystem::path(file_name_).parent_path() / name};
    for (const auto& dir : options_.include_dirs) candidates.emplace_back(std::filesystem::path(dir) / name);
    for (const auto& path : candidates) {
      std::error_code ec;
      if (!std::filesystem::exists(path, ec)) continue;
      if (std::find(include_stack_.begin(), include_stack_.end(), path.lexically_normal().string()) !=
          include_stack_.end()) {
        throw LineError{pos, fmt::format("'{}' includes itself", name)};
      }
      std::string text;
      try {
        text = read_input_file(path.string(), kMaxProgramTextBytes);
      } catch (const InputFileError& e) {
        throw LineError{pos, fmt::format("cannot include '{}': {}", name, e.message())};
      }
      include_stack_.push_back(path.lexically_normal().string());
      const LogicalLine* saved = line_;
      process_file(text, path.string(), depth + 1);
      line_ = saved;
      include_stack_.pop_back();
      return;
    }
    throw LineError{pos, fmt::format("cannot open included file '{}'", name)};
  }

  // .const NAME = EXPR   (integer arithmetic over literals and earlier constants, or one float literal)
  void parse_const(std::string_view text, std::size_t pos) {
    skip_space(text, pos);
    const std::size_t name_start = pos;
    while (pos < text.size() && is_ident_char(text[pos])) ++pos;
    if (pos == name_start || !is_ident_start(text[name_start]))
      throw LineError{name_start, "expected a constant name after .const"};
    const std::string name(text.substr(name_start, pos - name_start));
    skip_space(text, pos);
    if (pos >= text.size() || text[pos] != '=') throw LineError{pos, fmt::format("expected '=' after .const {}", name)};
    ++pos;
    const std::string expr = strip_comments(text.substr(pos));
    const std::string_view e = trim(expr);
    Operand value;
    if (looks_like_float(e) && parse_float(e)) {
      value.kind = Operand::Kind::kFloat;
      value.float_bits = std::bit_cast<std::uint32_t>(*parse_float(e));
    } else {
      ExprParser p{e, constants_, pos + (e.data() - expr.data())};
      value.kind = Operand::Kind::kInt;
      value.integer = p.parse();
    }
    if (constants_.contains(name)) throw LineError{name_start, fmt::format("constant '{}' is defined twice", name)};
    constants_[name] = value;
  }

  struct ExprParser {
    std::string_view s;
    const std::map<std::string, Operand, std::less<>>& constants;
    std::size_t base;
    std::size_t pos = 0;

    std::int64_t parse() {
      const std::int64_t v = parse_or();
      skip();
      if (pos != s.size())
        throw LineError{base + pos, fmt::format("unexpected '{}' in constant expression", s.substr(pos, 1))};
      return v;
    }
    void skip() {
      while (pos < s.size() && is_space(s[pos])) ++pos;
    }
    // a OP b, refused when the exact result does not fit 64 bits.
    template <typename Op>
    std::int64_t checked(Op op, std::int64_t a, std::int64_t b, std::size_t at) const {
      std::int64_t r = 0;
      if (op(a, b, &r)) throw LineError{base + at, "constant expression overflows 64 bits"};
      return r;
    }
    static bool add(std::int64_t a, std::int64_t b, std::int64_t* r) { return __builtin_add_overflow(a, b, r); }
    static bool sub(std::int64_t a, std::int64_t b, std::int64_t* r) { return __builtin_sub_overflow(a, b, r); }
    static bool mul(std::int64_t a, std::int64_t b, std::int64_t* r) { return __builtin_mul_overflow(a, b, r); }
    bool eat(std::string_view op) {
      skip();
      if (s.substr(pos).starts_with(op)) {
        pos += op.size();
        return true;
      }
      return false;
    }
    std::int64_t parse_or() {
      std::int64_t v = parse_and();
      while (eat("|")) v |= parse_and();
      return v;
    }
    std::int64_t parse_and() {
      std::int64_t v = parse_shift();
      while (eat("&")) v &= parse_shift();
      return v;
    }
    std::int64_t parse_shift() {
      std::int64_t v = parse_sum();
      for (;;) {
        if (eat("<<")) {
          const std::int64_t k = parse_sum();
          if (k < 0 || k > 62) throw LineError{base + pos, "shift amount out of range"};
          const auto shifted = static_cast<std::int64_t>(static_cast<std::uint64_t>(v) << k);
          if ((shifted >> k) != v) throw LineError{base + pos, "constant expression overflows 64 bits"};
          v = shifted;
        } else if (eat(">>")) {
          const std::int64_t k = parse_sum();
          if (k < 0 || k > 62) throw LineError{base + pos, "shift amount out of range"};
          v >>= k;
        } else {
          return v;
        }
      }
    }
    std::int64_t parse_sum() {
      std::int64_t v = parse_product();
      for (;;) {
        if (eat("+")) {
          const std::size_t at = pos;
          v = checked(add, v, parse_product(), at);
        } else if (eat("-")) {
          const std::size_t at = pos;
          v = checked(sub, v, parse_product(), at);
        } else {
          return v;
        }
      }
    }
    std::int64_t parse_product() {
      std::int64_t v = parse_unary();
      for (;;) {
        if (eat("*")) {
          const std::size_t at = pos;
          v = checked(mul, v, parse_unary(), at);
        } else if (eat("/") || eat("%")) {
          const bool is_div = s[pos - 1] == '/';
          const std::size_t at = pos;
          const std::int64_t d = parse_unary();
          if (d == 0) throw LineError{base + at, "division by zero in constant expression"};
          if (d == -1 && v == INT64_MIN) throw LineError{base + at, "constant expression overflows 64 bits"};
          v = is_div ? v / d : v % d;
        } else {
          return v;
        }
      }
    }
    std::int64_t parse_unary() {
      if (eat("-")) {
        const std::size_t at = pos;
        return checked(sub, 0, parse_unary(), at);
      }
      if (eat("(")) {
        const std::int64_t v = parse_or();
        if (!eat(")")) throw LineError{base + pos, "expected ')' in constant expression"};
        return v;
      }
      skip();
      const std::size_t start = pos;
      while (pos < s.size() && (is_ident_char(s[pos]))) ++pos;
      const std::string_view word = s.substr(start, pos - start);
      if (word.empty()) throw LineError{base + start, "expected a number or a constant name"};
      if (is_digit(word.front())) {
        const auto v = parse_integer(word);
        if (!v) throw LineError{base + start, integer_error(word)};
        return *v;
      }
      const auto it = constants.find(word);
      if (it == constants.end()) throw LineError{base + start, fmt::format("unknown constant '{}'", word)};
      if (it->second.kind != Operand::Kind::kInt) {
        throw LineError{base + start, fmt::format("constant '{}' is a float and cannot be used in arithmetic", word)};
      }
      return it->second.integer;
    }
  };

  // #allocationN[_spill] [shape = '...', space=vmem, size = 0x1000, offset = 0x0, tag = '...'] (stackN)
  void parse_allocation(std::string_view text, std::size_t pos) {
    Allocation a;
    a.source = loc_at(pos);
    std::size_t p = pos + 11;
    const std::size_t id_start = p;
    while (p < text.size() && is_digit(text[p])) ++p;
    if (p == id_start) throw LineError{id_start, "expected the allocation number after #allocation"};
    a.id = static_cast<std::uint32_t>(*parse_integer(text.substr(id_start, p - id_start)));
    if (text.substr(p).starts_with("_spill")) {
      a.spill = true;
      p += 6;
    }
    skip_space(text, p);
    if (p >= text.size() || text[p] != '[') throw LineError{p, "expected '[' with the allocation's attributes"};
    const std::size_t close = matching_close(text, p, '[', ']');
    if (close == std::string_view::npos) throw LineError{p, "expected ']' closing the allocation's attributes"};
    bool have_space = false;
    bool have_size = false;
    std::size_t q = p + 1;
    while (q < close) {
      skip_space(text, q);
      const std::size_t key_start = q;
      while (q < close && is_ident_char(text[q])) ++q;
      const std::string_view key = text.substr(key_start, q - key_start);
      skip_space(text, q);
      if (q >= close || text[q] != '=') throw LineError{q, fmt::format("expected '=' after '{}'", key)};
      ++q;
      skip_space(text, q);
      std::string value;
      const std::size_t value_start = q;
      const bool text_key = key == "shape" || key == "tag";
      if (q < close && text[q] == '\'') {
        const std::size_t end = text.find('\'', q + 1);
        if (end == std::string_view::npos || end > close) throw LineError{q, "unterminated quoted value"};
        value = std::string(text.substr(q + 1, end - q - 1));
        q = end + 1;
      } else if (text_key) {
        // Text values are quoted (as in the dumps), so any text round-trips through the disassembler.
        throw LineError{q, fmt::format("expected a quoted value for '{}', like {} = 'f32[8,128]'", key, key)};
      } else {
        while (q < close && text[q] != ',') ++q;
        value = std::string(trim(text.substr(value_start, q - value_start)));
      }
      skip_space(text, q);
      if (q < close && text[q] == ',') ++q;
      auto number = [&]() -> std::uint64_t {
        const auto v = parse_integer(value);
        if (!v || *v < 0)
          throw LineError{value_start, fmt::format("expected a non-negative integer for '{}', got '{}'", key, value)};
        return static_cast<std::uint64_t>(*v);
      };
      if (key == "shape") {
        a.shape = value;
      } else if (key == "space") {
        have_space = true;
        if (value == "vmem") {
          a.space = MemorySpace::kVmem;
        } else if (value == "smem") {
          a.space = MemorySpace::kSmem;
        } else if (value == "sflag") {
          a.space = MemorySpace::kSflag;
        } else if (value == "hbm") {
          a.space = MemorySpace::kHbm;
        } else {
          throw LineError{value_start, fmt::format("unknown space '{}': expected vmem, smem, sflag or hbm", value)};
        }
      } else if (key == "size") {
        have_size = true;
        a.size = number();
      } else if (key == "offset") {
        a.offset = number();
      } else if (key == "tag") {
        a.tag = value;
      } else {
        throw LineError{
            key_start,
            fmt::format("unknown allocation attribute '{}': expected shape, space, size, offset or tag", key)};
      }
    }
    if (!have_space) throw LineError{p, "allocation without 'space=' (vmem, smem, sflag or hbm)"};
    if (!have_size) throw LineError{p, "allocation without 'size ='"};
    for (const auto& existing : program_.allocations) {
      if (existing.id == a.id && existing.spill == a.spill) {
        throw LineError{pos, fmt::format("#allocation{}{} is declared twice", a.id, a.spill ? "_spill" : "")};
      }
    }
    program_.allocations.push_back(std::move(a));
  }

  // [ADDR [TAG] : [>]] { op ;; op } [comment]   or a single op without braces.
  void parse_bundle_line(std::string_view text, std::size_t pos) {
    Bundle bundle;
    bundle.source = loc_at(pos);
    std::size_t p = pos;
    if (is_digit(text[p])) {
      const std::size_t start = p;
      while (p < text.size() && std::isxdigit(static_cast<unsigned char>(text[p])) != 0) ++p;
      if (p < text.size() && (text[p] == 'x' || text[p] == 'X')) {
        ++p;
        while (p < text.size() && std::isxdigit(static_cast<unsigned char>(text[p])) != 0) ++p;
      }
      const auto address = parse_integer(text.substr(start, p - start));
      if (!address || *address < 0 || *address > 0xFFFFFFF) {
        throw LineError{start, fmt::format("bad bundle address '{}'", text.substr(start, p - start))};
      }
      bundle.address = static_cast<std::uint32_t>(*address);
      skip_space(text, p);
      if (p + 1 < text.size() && std::isupper(static_cast<unsigned char>(text[p])) != 0 &&
          std::isupper(static_cast<unsigned char>(text[p + 1])) != 0) {
        bundle.tag = std::string(text.substr(p, 2));
        static constexpr std::array<std::string_view, 6> kTags{"LH", "LB", "LE", "PB", "PF", "CT"};
        if (std::find(kTags.begin(), kTags.end(), bundle.tag) == kTags.end()) {
          throw LineError{p, fmt::format("unknown control tag '{}': expected LH, LB, LE, PB, PF or CT", bundle.tag)};
        }
        p += 2;
        skip_space(text, p);
      }
      if (p >= text.size() || text[p] != ':') throw LineError{p, "expected ':' after the bundle address"};
      ++p;
      skip_space(text, p);
      if (p < text.size() && text[p] == '>') {
        bundle.in_loop = true;
        ++p;
        skip_space(text, p);
      }
      if (p >= text.size() || text[p] != '{') throw LineError{p, "expected '{' opening the bundle"};
    }
    if (p < text.size() && text[p] == '{') {
      const std::size_t close = matching_close(text, p, '{', '}');
      if (close == std::string_view::npos) {
        for (std::size_t c = text.find("/*", p); c != std::string_view::npos; c = text.find("/*", c + 2)) {
          const std::size_t e = comment_end(text, c);
          if (e == std::string_view::npos) throw LineError{c, "unterminated comment: expected '*/'"};
          c = e - 2;
        }
        throw LineError{p, "expected '}' closing the bundle"};
      }
      parse_ops(text, p + 1, close, bundle);
      std::size_t tail = close + 1;
      skip_space(text, tail);
      bundle.comment = std::string(trim(text.substr(tail)));
      // Only comments may follow the bundle, and a `//` comment ends its line.
      std::size_t rest = tail;
      if (text.substr(rest).starts_with("# ")) rest = text.size();
      while (rest < text.size()) {
        if (text.substr(rest).starts_with("/*")) {
          const std::size_t e = comment_end(text, rest);
          if (e == std::string_view::npos) throw LineError{rest, "unterminated comment: expected '*/'"};
          rest = e;
        } else if (text.substr(rest).starts_with("//")) {
          const std::size_t nl = text.find('\n', rest);
          if (nl != std::string_view::npos) throw LineError{nl + 1, "unexpected text after the bundle's closing '}'"};
          rest = text.size();
        } else if (is_space(text[rest]) && text[rest] != '\n') {
          ++rest;
        } else {
          throw LineError{rest, "unexpected text after the bundle's closing '}'"};
        }
      }
    } else {
      // One op on its own line forms a bundle.
      parse_ops(text, p, text.size(), bundle);
    }
    if (!bundle.address) bundle.address = program_.bundles.empty() ? 0 : *program_.bundles.back().address + 1;
    program_.bundles.push_back(std::move(bundle));
  }

  // Splits [begin, end) at top-level ";;" and parses each op.
  void parse_ops(std::string_view text, std::size_t begin, std::size_t end, Bundle& bundle) {
    std::size_t start = begin;
    std::size_t i = begin;
    auto flush = [&](std::size_t stop) {
      std::size_t s = start;
      skip_space(text, s);
      if (s < stop) bundle.ops.push_back(parse_op(text.substr(0, stop), s, bundle.ops.size()));
    };
    while (i < end) {
      if (text.substr(i).starts_with("/*")) {
        const std::size_t e = comment_end(text, i);
        if (e == std::string_view::npos || e > end) throw LineError{i, "unterminated comment: expected '*/'"};
        i = e;
        continue;
      }
      if (text.substr(i).starts_with("//")) {
        const std::size_t nl = text.find('\n', i);
        i = nl == std::string_view::npos || nl > end ? end : nl;
        continue;
      }
      if (text[i] == '[') {
        const std::size_t c = matching_close(text, i, '[', ']');
        if (c == std::string_view::npos || c > end) throw LineError{i, "expected ']'"};
        i = c + 1;
        continue;
      }
      if (text[i] == ';' && i + 1 < end && text[i + 1] == ';') {
        flush(i);
        i += 2;
        start = i;
        continue;
      }
      ++i;
    }
    flush(end);
  }

  Op parse_op(std::string_view text, std::size_t pos, std::size_t op_index) {
    Op op;
    std::size_t p = pos;
    // Comments before the op belong to it.
    while (p < text.size() && text.substr(p).starts_with("/*")) {
      const std::size_t e = comment_end(text, p);
      if (e == std::string_view::npos) throw LineError{p, "unterminated comment: expected '*/'"};
      op.comment += text.substr(p, e - p);
      p = e;
      skip_space(text, p);
    }
    if (p >= text.size()) throw LineError{pos, "expected an op"};
    op.source = loc_at(p);
    // 1. Destination.
    if (text[p] == '%') {
      std::size_t q = p;
      Operand dest = parse_percent(text, q);
      std::size_t after = q;
      skip_space(text, after);
      if (after < text.size() && text[after] == '=') {
        if (dest.kind == Operand::Kind::kReg) {
          op.dest_kind = Op::DestKind::kReg;
          op.dest_reg = dest.reg;
        } else {
          op.dest_kind = Op::DestKind::kToken;
          op.dest_token = dest.token;
        }
        p = after + 1;
        skip_space(text, p);
      }
    }
    // 2. Mnemonic.
    const std::size_t mnemonic_start = p;
    std::string_view mnemonic;
    if (text.substr(p).starts_with("inlined_call_operand.<")) {
      const std::size_t close = text.find('>', p);
      if (close == std::string_view::npos) throw LineError{p, "expected '>' in inlined_call_operand.<...>"};
      mnemonic = text.substr(p, close + 1 - p);
      p = close + 1;
    } else {
      while (p < text.size() && (is_ident_char(text[p]) || text[p] == '-')) ++p;
      mnemonic = text.substr(mnemonic_start, p - mnemonic_start);
    }
    if (mnemonic.empty()) throw LineError{mnemonic_start, "expected an op mnemonic"};
    const auto match = find_mnemonic(mnemonic);
    if (!match) {
      throw LineError{mnemonic_start,
                      fmt::format("unknown mnemonic '{}'; did you mean '{}'?", mnemonic, nearest_mnemonic(mnemonic))};
    }
    op.opcode = match->id;
    op.unit = match->unit;
    const OpInfo& info = op_info(op.opcode);
    (void)op_index;

    // 3. Operands, guard, comments.
    std::vector<std::size_t> operand_offsets;
    std::string pending_name;
    std::size_t pending_name_offset = 0;
    while (true) {
      while (p < text.size() && (is_space(text[p]) || text[p] == ',')) ++p;
      if (p >= text.size()) break;
      if (text.substr(p).starts_with("/*")) {
        const std::size_t e = comment_end(text, p);
        if (e == std::string_view::npos) throw LineError{p, "unterminated comment: expected '*/'"};
        const std::string_view inner = text.substr(p + 2, e - p - 4);
        if (inner.size() >= 2 && inner.back() == '=' && std::all_of(inner.begin(), inner.end() - 1, [](char c) {
              return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
            })) {
          pending_name = std::string(inner.substr(0, inner.size() - 1));
          pending_name_offset = p;
        } else {
          if (!op.comment.empty()) op.comment += ' ';
          op.comment += text.substr(p, e - p);
          if (op.loc.empty()) op.loc = extract_loc(inner);
        }
        p = e;
        continue;
      }
      if (text.substr(p).starts_with("//")) break;
      if (text[p] == '(') {
        const std::size_t close = matching_close(text, p, '(', ')');
        if (close == std::string_view::npos) throw LineError{p, "expected ')'"};
        const std::string_view inner = trim(text.substr(p + 1, close - p - 1));
        if (inner.starts_with("%p") || inner.starts_with("!%p") || inner.starts_with("!")) {
          parse_guard(text, p + 1, close, op);
        } else if (!inner.empty() && std::all_of(inner.begin(), inner.end(), [](char c) {
                     return std::isalpha(static_cast<unsigned char>(c)) != 0;
                   })) {
          Operand flag;
          flag.kind = Operand::Kind::kFlag;
          flag.text = std::string(inner);
          operand_offsets.push_back(p);
          op.operands.push_back(std::move(flag));
        } else {
          throw LineError{
              p, fmt::format("expected a predicate guard like (%p1) or (!%p1), or a flag like (narrow), got '({})'",
                             inner)};
        }
        p = close + 1;
        continue;
      }
      Operand operand;
      const std::size_t operand_start = p;
      if (text[p] == '[') {
        operand = parse_bracket(text, p);
      } else if (text[p] == '%') {
        operand = parse_percent(text, p);
      } else if (text.substr(p).starts_with("target")) {
        operand = parse_target(text, p);
      } else {
        operand = parse_word(text, p);
      }
      if (!pending_name.empty()) {
        operand.name = std::move(pending_name);
        pending_name.clear();
      }
      operand_offsets.push_back(operand_start);
      op.operands.push_back(std::move(operand));
    }
    if (!pending_name.empty())
      throw LineError{pending_name_offset, fmt::format("/*{}=*/ is not followed by a value", pending_name)};

    check_against_table(op, info, mnemonic_start, operand_offsets, p);
    return op;
  }

  void parse_guard(std::string_view text, std::size_t begin, std::size_t close, Op& op) {
    std::size_t p = begin;
    skip_space(text, p);
    if (text[p] == '!') {
      op.guard_negated = true;
      ++p;
    }
    if (p >= close || text[p] != '%') throw LineError{p, "expected a predicate register after '!'"};
    Operand pred = parse_percent(text, p);
    if (pred.kind != Operand::Kind::kReg || pred.reg.cls != RegClass::kPredicate) {
      throw LineError{begin, "a guard must be a predicate register (%p)"};
    }
    if (op.guard) throw LineError{begin, "an op takes at most one guard"};
    op.guard = pred.reg;
    skip_space(text, p);
    if (p < close && text[p] == ',') {
      ++p;
      skip_space(text, p);
      Operand fallback = parse_percent(text, p);
      if (fallback.kind != Operand::Kind::kReg)
        throw LineError{p, "expected the register kept when the guard is false"};
      op.guard_fallback = fallback.reg;
      skip_space(text, p);
    }
    if (p != close) throw LineError{p, "unexpected text in the guard"};
  }

  // %v122_v0, %v0, %vm3_vm1, %s5, %p2_p0, %123
  Operand parse_percent(std::string_view text, std::size_t& p) {
    const std::size_t start = p;
    ++p;
    std::size_t e = p;
    while (e < text.size() && (std::isalnum(static_cast<unsigned char>(text[e])) != 0 || text[e] == '_')) ++e;
    const std::string_view body = text.substr(p, e - p);
    p = e;
    Operand o;
    if (!body.empty() && std::all_of(body.begin(), body.end(), is_digit)) {
      o.kind = Operand::Kind::kToken;
      const auto v = parse_integer(body);
      if (!v || *v > 0xFFFFFFFF) throw LineError{start, "token number out of range"};
      o.token = static_cast<std::uint32_t>(*v);
      return o;
    }
    auto class_of = [](std::string_view prefix) -> std::optional<RegClass> {
      if (prefix == "v") return RegClass::kVector;
      if (prefix == "vm") return RegClass::kMask;
      if (prefix == "s") return RegClass::kScalar;
      if (prefix == "p") return RegClass::kPredicate;
      return std::nullopt;
    };
    // Splits "vm12" into ("vm", 12).
    auto split = [&](std::string_view part) -> std::optional<std::pair<RegClass, std::uint32_t>> {
      std::size_t d = 0;
      while (d < part.size() && std::isalpha(static_cast<unsigned char>(part[d])) != 0) ++d;
      const auto cls = class_of(part.substr(0, d));
      const std::string_view digits = part.substr(d);
      if (!cls || digits.empty() || !std::all_of(digits.begin(), digits.end(), is_digit) || digits.size() > 6)
        return std::nullopt;
      return std::make_pair(*cls, static_cast<std::uint32_t>(*parse_integer(digits)));
    };
    const auto underscore = body.rfind('_');
    if (underscore == std::string_view::npos) {
      const auto reg = split(body);
      if (!reg)
        throw LineError{
            start, fmt::format("'%{}' is not a register (%v, %vm, %s, %p followed by a number) or a token (%N)", body)};
      o.kind = Operand::Kind::kReg;
      o.reg.cls = reg->first;
      if (reg->second > 1023) throw LineError{start, fmt::format("register index {} out of range", reg->second)};
      o.reg.index = static_cast<std::uint16_t>(reg->second);
      return o;
    }
    const auto ssa = split(body.substr(0, underscore));
    const auto phys = split(body.substr(underscore + 1));
    if (!ssa || !phys || ssa->first != phys->first) {
      throw LineError{start,
                      fmt::format("'%{}' is not a register: expected SSA form like %v12_v3 (value 12 in v3)", body)};
    }
    if (phys->second > 1023) throw LineError{start, fmt::format("register index {} out of range", phys->second)};
    o.kind = Operand::Kind::kReg;
    o.reg.cls = phys->first;
    o.reg.index = static_cast<std::uint16_t>(phys->second);
    o.reg.ssa = static_cast<std::int32_t>(ssa->second);
    return o;
  }

  // $0x1f / $8 / $true inside brackets.
  std::int64_t parse_dollar(std::string_view text, std::size_t& p, std::size_t limit) {
    if (p >= limit || text[p] != '$') throw LineError{p, "expected '$' before an attribute value"};
    ++p;
    const std::size_t s = p;
    while (p < limit && std::isalnum(static_cast<unsigned char>(text[p])) != 0) ++p;
    const auto v = parse_integer(text.substr(s, p - s));
    if (!v) throw LineError{s, fmt::format("expected a number after '$', got '{}'", text.substr(s, p - s))};
    return *v;
  }

  SymbolRef parse_symbol_body(std::string_view text, std::size_t& p, std::size_t limit) {
    // "#allocation3 + $0x1" / "#allocation8_spill"
    if (!text.substr(p).starts_with("#allocation")) throw LineError{p, "expected #allocationN"};
    p += 11;
    const std::size_t s = p;
    while (p < limit && is_digit(text[p])) ++p;
    if (p == s) throw LineError{s, "expected the allocation number after #allocation"};
    SymbolRef sym;
    sym.allocation = static_cast<std::uint32_t>(*parse_integer(text.substr(s, p - s)));
    if (text.substr(p).starts_with("_spill")) {
      sym.spill = true;
      p += 6;
    }
    skip_space(text, p);
    if (p < limit && (text[p] == '+' || text[p] == '-')) {
      const bool minus = text[p] == '-';
      ++p;
      skip_space(text, p);
      const std::int64_t v = parse_dollar(text, p, limit);
      sym.offset = minus ? -v : v;
    }
    return sym;
  }

  Operand parse_bracket(std::string_view text, std::size_t& p) {
    const std::size_t start = p;
    const std::size_t close = matching_close(text, p, '[', ']');
    if (close == std::string_view::npos) throw LineError{p, "expected ']'"};
    const std::string_view inner = text.substr(p + 1, close - p - 1);
    Operand o;
    std::size_t q = p + 1;
    skip_space(text, q);
    if (inner.starts_with("#allocation")) {
      o.kind = Operand::Kind::kSymbol;
      o.symbol = parse_symbol_body(text, q, close);
      skip_space(text, q);
      if (q != close) throw LineError{q, "unexpected text in the allocation reference"};
    } else if (inner.starts_with("vmem:[") || inner.starts_with("smem:[")) {
      o.kind = Operand::Kind::kMem;
      o.mem.space = inner.starts_with("vmem") ? MemRef::Space::kVmem : MemRef::Space::kSmem;
      q += 5;
      const std::size_t inner_close = matching_close(text, q, '[', ']');
      if (inner_close == std::string_view::npos || inner_close > close)
        throw LineError{q, "expected ']' after the address"};
      ++q;
      skip_space(text, q);
      if (text[q] == '%') {
        Operand base = parse_percent(text, q);
        if (base.kind != Operand::Kind::kReg || base.reg.cls != RegClass::kScalar) {
          throw LineError{q, "a memory address base must be a scalar register or #allocationN"};
        }
        o.mem.base_reg = base.reg;
        skip_space(text, q);
        if (q < inner_close && (text[q] == '+' || text[q] == '-')) {
          const bool minus = text[q] == '-';
          ++q;
          skip_space(text, q);
          const std::int64_t v = parse_dollar(text, q, inner_close);
          o.mem.offset = minus ? -v : v;
        }
      } else {
        SymbolRef sym = parse_symbol_body(text, q, inner_close);
        o.mem.offset = sym.offset;
        sym.offset = 0;
        o.mem.base_symbol = sym;
      }
      skip_space(text, q);
      if (q != inner_close) throw LineError{q, "unexpected text in the memory address"};
      q = inner_close + 1;
      while (true) {
        skip_space(text, q);
        if (q >= close) break;
        if (text.substr(q).starts_with("ss:")) {
          q += 3;
          o.mem.sublane_stride = static_cast<std::uint32_t>(parse_dollar(text, q, close));
        } else if (text.substr(q).starts_with("sm:%")) {
          q += 3;
          const std::size_t at = q;
          const Operand mask = parse_percent(text, q);
          if (mask.kind != Operand::Kind::kReg || mask.reg.cls != RegClass::kScalar) {
            throw LineError{at, "a sublane mask must be $0xNN or a scalar register"};
          }
          o.mem.sublane_mask_reg = mask.reg;
        } else if (text.substr(q).starts_with("sm:")) {
          q += 3;
          const std::size_t at = q;
          const std::int64_t mask = parse_dollar(text, q, close);
          if (mask < 0 || mask > 0xFF) throw LineError{at, "sublane mask must be within $0x0..$0xff"};
          o.mem.sublane_mask = static_cast<std::uint32_t>(mask);
        } else {
          throw LineError{q, "expected ss:$N or sm:$0xNN after the memory address"};
        }
      }
    } else if (inner.starts_with("shape:")) {
      o.kind = Operand::Kind::kDecl;
      // shape: f32[16,256], index: 0, kind: input, shape index: {}
      auto field = [&](std::string_view key) -> std::string {
        const auto k = inner.find(key);
        if (k == std::string_view::npos) throw LineError{p + 1, fmt::format("operand declaration without '{}'", key)};
        std::size_t v = k + key.size();
        int depth = 0;
        std::size_t e = v;
        for (; e < inner.size(); ++e) {
          const char c = inner[e];
          if (c == '[' || c == '{') ++depth;
          if (c == ']' || c == '}') --depth;
          if (c == ',' && depth == 0) break;
        }
        // A field is text on one line: a bracket left open joins lines, and a
        // value holding a line break or a comment's delimiters would print as
        // text that does not assemble back (found by fuzz_assembler).
        const std::string_view value = trim(inner.substr(v, e - v));
        for (const std::string_view bad : {"\n", "/*", "*/", "//"}) {
          if (value.find(bad) != std::string_view::npos) {
            throw LineError{p + 1 + k, fmt::format("operand declaration field '{}' runs over {}", key,
                                                   bad == "\n" ? "a line break (a bracket left open?)" : "a comment")};
          }
        }
        return std::string(value);
      };
      o.decl.shape = field("shape:");
      const std::string index = field("index:");
      const auto idx = parse_integer(index);
      if (!idx || *idx < 0 || *idx > 0xFFFF) throw LineError{p + 1, fmt::format("bad operand index '{}'", index)};
      o.decl.index = static_cast<std::uint32_t>(*idx);
      o.decl.kind = field("kind:");
      if (o.decl.kind != "input" && o.decl.kind != "output") {
        throw LineError{p + 1, fmt::format("operand kind '{}': expected input or output", o.decl.kind)};
      }
      o.decl.shape_index = inner.find("shape index:") == std::string_view::npos ? std::string() : field("shape index:");
    } else if (!inner.empty() && is_digit(inner.front()) && inner.find('/') != std::string_view::npos) {
      o.kind = Operand::Kind::kChunk;
      const auto slash = inner.find('/');
      const auto k = parse_integer(trim(inner.substr(0, slash)));
      const auto n = parse_integer(trim(inner.substr(slash + 1)));
      if (!k || !n || *k < 1 || *n < 1 || *k > *n || *n > 1024)
        throw LineError{p, fmt::format("bad transpose chunk '[{}]'", inner)};
      o.integer = *k;
      o.chunk_count = static_cast<std::uint32_t>(*n);
    } else if (const auto colon = inner.find(":$"); colon != std::string_view::npos && colon > 0) {
      o.kind = Operand::Kind::kAttr;
      o.text = std::string(trim(inner));
    } else {
      throw LineError{start, fmt::format("unrecognised bracket operand '[{}]'", inner)};
    }
    p = close + 1;
    return o;
  }

  // target bundleno = 60 (0x3c), region = 28   |   target = label
  Operand parse_target(std::string_view text, std::size_t& p) {
    const std::size_t start = p;
    p += 6;
    skip_space(text, p);
    Operand o;
    o.kind = Operand::Kind::kTarget;
    if (text.substr(p).starts_with("bundleno")) {
      p += 8;
      skip_space(text, p);
      if (p >= text.size() || text[p] != '=') throw LineError{p, "expected '=' after 'bundleno'"};
      ++p;
      skip_space(text, p);
      const std::size_t s = p;
      while (p < text.size() && std::isalnum(static_cast<unsigned char>(text[p])) != 0) ++p;
      const auto n = parse_integer(text.substr(s, p - s));
      if (!n || *n < 0 || *n > 0xFFFFFFF) throw LineError{s, "expected the target bundle number"};
      o.target.bundleno = static_cast<std::uint32_t>(*n);
      skip_space(text, p);
      if (p < text.size() && text[p] == '(') {  // (0x3c): must agree
        const std::size_t c = text.find(')', p);
        if (c == std::string_view::npos) throw LineError{p, "expected ')'"};
        const auto hex = parse_integer(trim(text.substr(p + 1, c - p - 1)));
        if (!hex || *hex != *n)
          throw LineError{p,
                          fmt::format("target ({}) does not match bundleno = {}", text.substr(p + 1, c - p - 1), *n)};
        p = c + 1;
      }
      skip_space(text, p);
      if (p < text.size() && text[p] == ',') {
        std::size_t q = p + 1;
        skip_space(text, q);
        if (text.substr(q).starts_with("region")) {
          q += 6;
          skip_space(text, q);
          if (q >= text.size() || text[q] != '=') throw LineError{q, "expected '=' after 'region'"};
          ++q;
          skip_space(text, q);
          const std::size_t s2 = q;
          while (q < text.size() && is_digit(text[q])) ++q;
          const auto r = parse_integer(text.substr(s2, q - s2));
          if (!r || *r > 0x7FFFFFFF) throw LineError{s2, "expected the region number"};
          o.target.region = static_cast<std::int32_t>(*r);
          p = q;
        }
      }
      return o;
    }
    if (p < text.size() && text[p] == '=') {
      ++p;
      skip_space(text, p);
      const std::size_t s = p;
      while (p < text.size() && is_ident_char(text[p])) ++p;
      if (p == s) throw LineError{s, "expected a label after 'target ='"};
      o.text = std::string(text.substr(s, p - s));  // resolved after all bundles are read
      return o;
    }
    throw LineError{start, "expected 'target bundleno = N' or 'target = label'"};
  }

  // Numbers, nan/inf, and .const names.
  Operand parse_word(std::string_view text, std::size_t& p) {
    const std::size_t start = p;
    while (p < text.size() && !is_space(text[p]) && text[p] != ',' && text[p] != ';' && text[p] != '/' &&
           text[p] != '(' && text[p] != ')' && text[p] != '[') {
      ++p;
    }
    const std::string_view word = text.substr(start, p - start);
    if (word.empty()) throw LineError{start, fmt::format("unexpected '{}'", text.substr(start, 1))};
    Operand o;
    if (looks_like_float(word)) {
      const auto f = parse_float(word);
      if (!f) throw LineError{start, fmt::format("'{}' is not a number", word)};
      o.kind = Operand::Kind::kFloat;
      o.float_bits = std::bit_cast<std::uint32_t>(*f);
      return o;
    }
    if (is_digit(word.front()) || word.front() == '-' || word.front() == '+') {
      const auto v = parse_integer(word);
      if (!v && integer_literal(word)) throw LineError{start, fmt::format("{} does not fit in 32 bits", word)};
      if (!v) throw LineError{start, fmt::format("'{}' is not a number", word)};
      if (*v < -(1LL << 31) || *v > 0xFFFFFFFFLL)
        throw LineError{start, fmt::format("{} does not fit in 32 bits", word)};
      o.kind = Operand::Kind::kInt;
      o.integer = *v;
      return o;
    }
    if (const auto it = constants_.find(word); it != constants_.end()) {
      const Operand& c = it->second;
      if (c.kind == Operand::Kind::kInt && (c.integer < -(1LL << 31) || c.integer > 0xFFFFFFFFLL)) {
        throw LineError{start, fmt::format("constant '{}' = {} does not fit in 32 bits", word, c.integer)};
      }
      return c;
    }
    throw LineError{start,
                    fmt::format("unexpected '{}': expected an operand (register, number, [..] reference)", word)};
  }

  static bool matches(const Operand& o, OperandClass c) {
    switch (c) {
      case OperandClass::kVreg:
        return o.kind == Operand::Kind::kReg && o.reg.cls == RegClass::kVector;
      case OperandClass::kMask:
        return o.kind == Operand::Kind::kReg && o.reg.cls == RegClass::kMask;
      case OperandClass::kSreg:
        return o.kind == Operand::Kind::kReg && o.reg.cls == RegClass::kScalar;
      case OperandClass::kPred:
        return o.kind == Operand::Kind::kReg && o.reg.cls == RegClass::kPredicate;
      case OperandClass::kToken:
        return o.kind == Operand::Kind::kToken;
      case OperandClass::kInt:
        return o.kind == Operand::Kind::kInt;
      case OperandClass::kNumber:
        return o.kind == Operand::Kind::kInt || o.kind == Operand::Kind::kFloat;
      case OperandClass::kSymbol:
        return o.kind == Operand::Kind::kSymbol;
      case OperandClass::kVmem:
        return o.kind == Operand::Kind::kMem && o.mem.space == MemRef::Space::kVmem;
      case OperandClass::kSmem:
        return o.kind == Operand::Kind::kMem && o.mem.space == MemRef::Space::kSmem;
      case OperandClass::kThread:
        return o.kind == Operand::Kind::kAttr && o.text.starts_with("thread:$");
      case OperandClass::kResolvable:
        return o.kind == Operand::Kind::kAttr && o.text.starts_with("resolvable:$");
      case OperandClass::kChunk:
        return o.kind == Operand::Kind::kChunk;
      case OperandClass::kFlag:
        return o.kind == Operand::Kind::kFlag && (o.text == "narrow" || o.text == "short");
      case OperandClass::kTarget:
        return o.kind == Operand::Kind::kTarget;
      case OperandClass::kDecl:
        return o.kind == Operand::Kind::kDecl;
    }
    return false;
  }

  static std::string expected_text(const OperandSyntax& s) {
    std::string out;
    for (std::size_t i = 0; i < s.alternatives.size(); ++i) {
      if (i > 0) out += i + 1 == s.alternatives.size() ? " or " : ", ";
      out += describe(s.alternatives[i]);
    }
    return out;
  }

  static std::string syntax_text(const OpInfo& info, std::uint8_t unit) {
    return fmt::format("{} {}", mnemonic_text(info.id, unit), info.syntax);
  }

  void check_against_table(Op& op, const OpInfo& info, std::size_t mnemonic_offset,
                           const std::vector<std::size_t>& offsets, std::size_t end_offset) {
    // Destination.
    if (info.dest) {
      if (op.dest_kind == Op::DestKind::kNone && *info.dest != OperandClass::kToken) {
        throw LineError{mnemonic_offset,
                        fmt::format("{} needs a destination {} (syntax: {})", mnemonic_text(info.id, op.unit),
                                    describe(*info.dest), syntax_text(info, op.unit))};
      }
      if (op.dest_kind == Op::DestKind::kReg) {
        Operand d;
        d.kind = Operand::Kind::kReg;
        d.reg = op.dest_reg;
        if (!matches(d, *info.dest)) {
          throw LineError{op.source.column == 0 ? mnemonic_offset : mnemonic_offset,
                          fmt::format("{} writes {}, not a register of this class", mnemonic_text(info.id, op.unit),
                                      describe(*info.dest))};
        }
      }
      if (op.dest_kind == Op::DestKind::kToken && *info.dest != OperandClass::kToken) {
        throw LineError{mnemonic_offset, fmt::format("{} writes {}, not a token", mnemonic_text(info.id, op.unit),
                                                     describe(*info.dest))};
      }
    }
    if (op.guard_fallback && (op.dest_kind != Op::DestKind::kReg || op.guard_fallback->cls != op.dest_reg.cls)) {
      throw LineError{mnemonic_offset, "a guard with a kept register needs a destination register of the same class"};
    }
    // Operands, positionally.
    const auto& syntax = info.operands;
    std::size_t si = 0;
    for (std::size_t oi = 0; oi < op.operands.size(); ++oi) {
      Operand& o = op.operands[oi];
      if (si >= syntax.size()) {
        throw LineError{offsets[oi], fmt::format("too many operands for {} (syntax: {})",
                                                 mnemonic_text(info.id, op.unit), syntax_text(info, op.unit))};
      }
      const OperandSyntax& s = syntax[si];
      const bool ok =
          std::any_of(s.alternatives.begin(), s.alternatives.end(), [&](OperandClass c) { return matches(o, c); });
      if (!ok) {
        throw LineError{offsets[oi], fmt::format("operand {} of {}: expected {}", oi + 1,
                                                 mnemonic_text(info.id, op.unit), expected_text(s))};
      }
      if (!o.name.empty() && o.name != s.name) {
        throw LineError{offsets[oi], s.name.empty() ? fmt::format("operand {} of {} takes no /*{}=*/ tag", oi + 1,
                                                                  mnemonic_text(info.id, op.unit), o.name)
                                                    : fmt::format("operand {} of {} is /*{}=*/, not /*{}=*/", oi + 1,
                                                                  mnemonic_text(info.id, op.unit), s.name, o.name)};
      }
      o.name = s.name;  // canonical
      if (o.kind == Operand::Kind::kTarget && !o.text.empty()) {
        label_refs_.push_back({program_.bundles.size(), 0, oi, o.text, make_diagnostic(offsets[oi], "")});
      }
      if (!s.variadic) ++si;
    }
    while (si < syntax.size() && syntax[si].variadic) ++si;
    if (si < syntax.size()) {
      throw LineError{end_offset, fmt::format("{} expects {} here (syntax: {})", mnemonic_text(info.id, op.unit),
                                              expected_text(syntax[si]), syntax_text(info, op.unit))};
    }
  }

  void resolve_labels() {
    for (auto& ref : label_refs_) {
      // ref.bundle is the index the op's bundle got; find the op holding the label operand.
      if (ref.bundle >= program_.bundles.size()) continue;
      const auto it = labels_.find(ref.label);
      if (it == labels_.end()) {
        Diagnostic d = ref.where;
        d.message = fmt::format("unknown label '{}'", ref.label);
        if (diagnostics_.size() < kMaxDiagnostics) diagnostics_.push_back(std::move(d));
        continue;
      }
      if (it->second >= program_.bundles.size()) {
        Diagnostic d = ref.where;
        d.message = fmt::format("label '{}' is not followed by any bundle", ref.label);
        if (diagnostics_.size() < kMaxDiagnostics) diagnostics_.push_back(std::move(d));
        continue;
      }
      for (Op& op : program_.bundles[ref.bundle].ops) {
        for (Operand& o : op.operands) {
          if (o.kind == Operand::Kind::kTarget && o.text == ref.label) {
            o.target.bundleno = *program_.bundles[it->second].address;
            o.text.clear();
          }
        }
      }
    }
  }

  // Gives allocations without an offset the next free, aligned place in their space.
  void place_allocations() {
    auto alignment = [](MemorySpace s) -> std::uint64_t {
      switch (s) {
        case MemorySpace::kVmem:
          return 4096;  // one (8,128) f32 tile
        case MemorySpace::kHbm:
          return 4096;
        case MemorySpace::kSmem:
          return 4;
        case MemorySpace::kSflag:
          return 4;
      }
      return 4;
    };
    std::map<MemorySpace, std::uint64_t> next_free;
    for (const auto& a : program_.allocations) {
      if (a.offset) next_free[a.space] = std::max(next_free[a.space], *a.offset + a.size);
    }
    for (auto& a : program_.allocations) {
      if (a.offset) continue;
      const std::uint64_t align = alignment(a.space);
      std::uint64_t& free = next_free[a.space];
      free = (free + align - 1) / align * align;
      a.offset = free;
      free += a.size;
    }
  }
};

std::string format_float(std::uint32_t bits) {
  const float f = std::bit_cast<float>(bits);
  if (std::isnan(f)) return std::signbit(f) ? "-nan" : "nan";
  if (std::isinf(f)) return f < 0 ? "-inf" : "inf";
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, f);
  std::string s(buf, ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string format_reg(const Reg& r) {
  if (r.ssa < 0) return fmt::format("%{}{}", reg_prefix(r.cls), r.index);
  return fmt::format("%{}{}_{}{}", reg_prefix(r.cls), r.ssa, reg_prefix(r.cls), r.index);
}

// " + $0x8" / " - $0x8" for a signed offset (any int64, INT64_MIN included).
std::string format_offset(std::int64_t offset) {
  if (offset > 0) return fmt::format(" + $0x{:x}", offset);
  if (offset < 0) return fmt::format(" - $0x{:x}", 0 - static_cast<std::uint64_t>(offset));
  return {};
}

std::string format_symbol_body(const SymbolRef& s, std::int64_t offset) {
  return fmt::format("#allocation{}{}", s.allocation, s.spill ? "_spill" : "") + format_offset(offset);
}

bool is_prefix_kind(Operand::Kind k) {
  return k == Operand::Kind::kAttr || k == Operand::Kind::kChunk || k == Operand::Kind::kFlag ||
         k == Operand::Kind::kMem;
}

}  // namespace

std::string_view reg_prefix(RegClass c) {
  switch (c) {
    case RegClass::kScalar:
      return "s";
    case RegClass::kVector:
      return "v";
    case RegClass::kMask:
      return "vm";
    case RegClass::kPredicate:
      return "p";
  }
  return "?";
}

bool Operand::operator==(const Operand& o) const {
  if (kind != o.kind || name != o.name) return false;
  switch (kind) {
    case Kind::kReg:
      return reg == o.reg;
    case Kind::kToken:
      return token == o.token;
    case Kind::kInt:
      return integer == o.integer;
    case Kind::kFloat:
      return float_bits == o.float_bits;
    case Kind::kSymbol:
      return symbol == o.symbol;
    case Kind::kMem:
      return mem == o.mem;
    case Kind::kAttr:
    case Kind::kFlag:
      return text == o.text;
    case Kind::kChunk:
      return integer == o.integer && chunk_count == o.chunk_count;
    case Kind::kTarget:
      return target == o.target && text == o.text;
    case Kind::kDecl:
      return decl == o.decl;
  }
  return false;
}

bool Op::operator==(const Op& o) const {
  return opcode == o.opcode && unit == o.unit && dest_kind == o.dest_kind &&
         (dest_kind != DestKind::kReg || dest_reg == o.dest_reg) &&
         (dest_kind != DestKind::kToken || dest_token == o.dest_token) && guard == o.guard &&
         guard_negated == o.guard_negated && guard_fallback == o.guard_fallback && operands == o.operands;
}

bool Bundle::operator==(const Bundle& o) const {
  return address == o.address && tag == o.tag && in_loop == o.in_loop && ops == o.ops;
}

std::string format_diagnostic(const Diagnostic& d) {
  // A diagnostic about the whole file (line 0: it cannot be read) has no position.
  std::string out = d.line == 0 ? fmt::format("{}: error: {}", d.file, d.message)
                                : fmt::format("{}:{}:{}: error: {}", d.file, d.line, d.column, d.message);
  if (!d.line_text.empty()) {
    std::string caret;
    for (std::uint32_t i = 1; i < d.column && i <= d.line_text.size(); ++i)
      caret += d.line_text[i - 1] == '\t' ? '\t' : ' ';
    out += fmt::format("\n    {}\n    {}^", d.line_text, caret);
  }
  return out;
}

AsmError::AsmError(std::vector<Diagnostic> diagnostics)
    : std::runtime_error([&] {
        std::string all;
        for (const auto& d : diagnostics) {
          if (!all.empty()) all += '\n';
          all += format_diagnostic(d);
        }
        return all;
      }()),
      diagnostics_(std::move(diagnostics)) {}

Program assemble(std::string_view text, const std::string& file_name, const AssembleOptions& options) {
  Assembler assembler(options);
  return assembler.run(text, file_name);
}

std::vector<Allocation> parse_allocation_table(std::string_view text, const std::string& file_name) {
  const AssembleOptions options;
  Assembler assembler(options, true);
  return assembler.run(text, file_name).allocations;
}

Program assemble_file(const std::string& path, const AssembleOptions& options) {
  std::string text;
  try {
    text = read_input_file(path, kMaxProgramTextBytes);
  } catch (const InputFileError& e) {
    Diagnostic d;
    d.file = path;
    d.message = e.message();
    throw AsmError({d});
  }
  return assemble(text, path, options);
}

std::string format_operand(const Operand& o) {
  std::string out = o.name.empty() ? std::string() : fmt::format("/*{}=*/", o.name);
  switch (o.kind) {
    case Operand::Kind::kReg:
      out += format_reg(o.reg);
      break;
    case Operand::Kind::kToken:
      out += fmt::format("%{}", o.token);
      break;
    case Operand::Kind::kInt:
      out += fmt::format("{}", o.integer);
      break;
    case Operand::Kind::kFloat:
      out += format_float(o.float_bits);
      break;
    case Operand::Kind::kSymbol:
      out += "[" + format_symbol_body(o.symbol, o.symbol.offset) + "]";
      break;
    case Operand::Kind::kMem: {
      out += o.mem.space == MemRef::Space::kVmem ? "[vmem:[" : "[smem:[";
      if (o.mem.base_reg) {
        out += format_reg(*o.mem.base_reg) + format_offset(o.mem.offset);
      } else if (o.mem.base_symbol) {
        out += format_symbol_body(*o.mem.base_symbol, o.mem.offset);
      }
      out += "]";
      if (o.mem.sublane_stride) out += fmt::format(" ss:${}", *o.mem.sublane_stride);
      if (o.mem.sublane_mask) out += fmt::format(" sm:$0x{:x}", *o.mem.sublane_mask);
      if (o.mem.sublane_mask_reg) out += " sm:" + format_reg(*o.mem.sublane_mask_reg);
      out += "]";
      break;
    }
    case Operand::Kind::kAttr:
      out += "[" + o.text + "]";
      break;
    case Operand::Kind::kChunk:
      out += fmt::format("[{}/{}]", o.integer, o.chunk_count);
      break;
    case Operand::Kind::kFlag:
      out += "(" + o.text + ")";
      break;
    case Operand::Kind::kTarget:
      if (!o.text.empty()) {
        out += "target = " + o.text;
      } else {
        out += fmt::format("target bundleno = {} (0x{:x})", o.target.bundleno, o.target.bundleno);
        if (o.target.region >= 0) out += fmt::format(", region = {}", o.target.region);
      }
      break;
    case Operand::Kind::kDecl:
      out += fmt::format("[shape: {}, index: {}, kind: {}", o.decl.shape, o.decl.index, o.decl.kind);
      if (!o.decl.shape_index.empty()) out += fmt::format(", shape index: {}", o.decl.shape_index);
      out += "]";
      break;
  }
  return out;
}

std::string format_op(const Op& op) {
  std::string out;
  if (op.dest_kind == Op::DestKind::kReg) out += format_reg(op.dest_reg) + " = ";
  if (op.dest_kind == Op::DestKind::kToken) out += fmt::format("%{} = ", op.dest_token);
  out += mnemonic_text(op.opcode, op.unit);
  // The guard follows the leading [attr] operands.
  std::size_t leading_attrs = 0;
  while (leading_attrs < op.operands.size() && op.operands[leading_attrs].kind == Operand::Kind::kAttr) ++leading_attrs;
  bool guard_printed = !op.guard;
  for (std::size_t i = 0; i <= op.operands.size(); ++i) {
    if (!guard_printed && i == leading_attrs) {
      out += i == 0 ? " (" : "  (";
      if (op.guard_negated) out += '!';
      out += format_reg(*op.guard);
      if (op.guard_fallback) out += ", " + format_reg(*op.guard_fallback);
      out += ')';
      guard_printed = true;
      if (i < op.operands.size()) out += op.operands[i].kind == Operand::Kind::kTarget ? " " : ",";
    }
    if (i == op.operands.size()) break;
    if (i == 0) {
      out += ' ';
    } else if (!(guard_printed && op.guard && i == leading_attrs)) {
      out += is_prefix_kind(op.operands[i - 1].kind) ? " " : ", ";
    } else {
      out += ' ';
    }
    out += format_operand(op.operands[i]);
  }
  if (!op.comment.empty()) out += " " + op.comment;
  return out;
}

std::string disassemble(const Program& program) {
  std::string out =
      "= control target key start\nLH: loop header\nLB: loop body\nLE: loop exit\nPB: predicated region body\n"
      "PF: predicated region fallthrough\nCT: control target\n= control target key end\n\n";
  for (const auto& a : program.allocations) {
    const std::string_view space = memory_space_name(a.space);
    out += fmt::format("#allocation{}{} [shape = '{}', space={}, size = 0x{:x}", a.id, a.spill ? "_spill" : "", a.shape,
                       space, a.size);
    if (a.offset) out += fmt::format(", offset = 0x{:x}", *a.offset);
    out += fmt::format(", tag = '{}']\n", a.tag);
  }
  if (!program.allocations.empty()) out += '\n';
  for (const auto& b : program.bundles) {
    const std::uint32_t address = b.address.value_or(0);
    const std::string addr = address == 0 ? std::string("0") : fmt::format("0x{:x}", address);
    out += fmt::format("{:>6} {:2}: {}", addr, b.tag, b.in_loop ? "> " : " ");
    if (b.ops.empty()) {
      out += "{}";
    } else {
      out += "{ ";
      for (std::size_t i = 0; i < b.ops.size(); ++i) {
        if (i > 0) out += "  ;;  ";
        out += format_op(b.ops[i]);
      }
      out += " }";
    }
    if (!b.comment.empty()) out += " " + b.comment;
    out += '\n';
  }
  return out;
}

}  // namespace tpuemu::isa

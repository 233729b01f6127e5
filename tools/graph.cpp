#include "tools/graph.hpp"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "api/output_files.hpp"
#include "common/units.hpp"
#include "dist/ranks.hpp"
#include "isa/assembler.hpp"
#include "isa/op_table.hpp"

namespace tpuemu::cli {
namespace {

// DOT's double-quoted string body.
std::string dot_string(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The executable `name` on PATH, or "".
std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  std::string all(path);
  std::size_t start = 0;
  while (start <= all.size()) {
    const std::size_t end = std::min(all.find(':', start), all.size());
    const std::string dir = all.substr(start, end - start);
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

std::string reg_key(const isa::Reg& r) {
  return fmt::format("{}{}", isa::reg_prefix(r.cls), r.index);
}

enum class EdgeKind { kRegister, kFlag, kDma };

struct Edge {
  std::size_t from, to;
  EdgeKind kind;
  std::string label;
  bool operator<(const Edge& o) const {
    return std::tie(from, to, kind, label) < std::tie(o.from, o.to, o.kind, o.label);
  }
};

}  // namespace

namespace {

// One program's nodes and edges as DOT lines, node ids prefixed `prefix`;
// takes up to `budget` nodes (whole bundles) and lowers it by what it drew.
// Returns the note about what was left out ("" if nothing).
std::string append_program(std::string& out, const std::string& prefix, const std::string& name,
                           const isa::Program& program, const ChipConfig& chip, std::size_t& budget) {
  std::string note;
  // 1. The ops drawn: whole bundles while they fit the budget.
  struct Node {
    std::size_t bundle;
    const isa::Op* op;
    std::uint64_t latency;
  };
  std::vector<Node> nodes;
  std::size_t total_ops = 0;
  for (const auto& b : program.bundles) total_ops += b.ops.size();
  std::size_t bundles_drawn = 0;
  for (std::size_t bi = 0; bi < program.bundles.size(); ++bi) {
    const auto& ops = program.bundles[bi].ops;
    if (nodes.size() + ops.size() > budget) break;
    for (const auto& op : ops) {
      auto lat = static_cast<std::uint64_t>(chip.latency(isa::op_info(op.opcode).latency).value());
      // A DMA's transfer as well: HBM latency + its bytes at HBM bandwidth.
      for (const auto& o : op.operands) {
        if (o.kind == isa::Operand::Kind::kInt && o.name == "size_in_granules" && chip.hbm.bandwidth > 0) {
          const double bytes = 32.0 * static_cast<double>(o.integer);
          lat += static_cast<std::uint64_t>((chip.hbm.latency_s + bytes / chip.hbm.bandwidth) * chip.clock_hz);
        }
      }
      nodes.push_back({bi, &op, std::max<std::uint64_t>(lat, 1)});
    }
    bundles_drawn = bi + 1;
  }
  budget -= nodes.size();
  if (nodes.size() < total_ops) {
    note = fmt::format("{}: drawing the first {} of {} bundles ({} of {} ops)", name, bundles_drawn,
                       program.bundles.size(), nodes.size(), total_ops);
  }

  // 2. Dependencies, in program order; a bundle's ops read before any writes.
  std::set<Edge> edges;
  std::map<std::string, std::size_t> last_writer;  // register or token
  // Per sync flag (allocation, offset): the ops that changed it since its last wait.
  std::map<std::pair<std::uint32_t, std::int64_t>, std::vector<std::size_t>> signalers;
  std::set<std::uint32_t> flag_allocations;
  for (const auto& a : program.allocations) {
    if (a.space == MemorySpace::kSflag) flag_allocations.insert(a.id);
  }
  std::size_t first = 0;
  while (first < nodes.size()) {
    std::size_t last = first;
    while (last < nodes.size() && nodes[last].bundle == nodes[first].bundle) ++last;
    std::vector<std::pair<std::string, std::size_t>> writes;
    for (std::size_t n = first; n < last; ++n) {
      const isa::Op& op = *nodes[n].op;
      const isa::OpInfo& info = isa::op_info(op.opcode);
      const auto read = [&](const std::string& key) {
        const auto it = last_writer.find(key);
        if (it != last_writer.end()) edges.insert({it->second, n, EdgeKind::kRegister, key});
      };
      if (op.guard) read(reg_key(*op.guard));
      if (op.guard_fallback) read(reg_key(*op.guard_fallback));
      const bool waits = info.mnemonic.find("wait") != std::string_view::npos;
      for (const auto& o : op.operands) {
        switch (o.kind) {
          case isa::Operand::Kind::kReg:
            read(reg_key(o.reg));
            break;
          case isa::Operand::Kind::kToken:
            read(fmt::format("%{}", o.token));
            break;
          case isa::Operand::Kind::kMem:
            if (o.mem.base_reg) read(reg_key(*o.mem.base_reg));
            if (o.mem.sublane_mask_reg) read(reg_key(*o.mem.sublane_mask_reg));
            break;
          case isa::Operand::Kind::kSymbol: {
            if (flag_allocations.count(o.symbol.allocation) == 0U) break;
            const auto flag = std::make_pair(o.symbol.allocation, o.symbol.offset);
            const std::string label = fmt::format("flag #{}+{}", o.symbol.allocation, o.symbol.offset);
            if (waits) {
              for (std::size_t s : signalers[flag]) {
                const bool dma = isa::op_info(nodes[s].op->opcode).slot == SlotClass::kDma;
                edges.insert({s, n, dma ? EdgeKind::kDma : EdgeKind::kFlag, label});
              }
              signalers[flag].clear();
            } else {
              signalers[flag].push_back(n);
            }
            break;
          }
          default:
            break;
        }
      }
      if (op.dest_kind == isa::Op::DestKind::kReg) writes.emplace_back(reg_key(op.dest_reg), n);
      if (op.dest_kind == isa::Op::DestKind::kToken) writes.emplace_back(fmt::format("%{}", op.dest_token), n);
    }
    for (const auto& [key, n] : writes) last_writer[key] = n;
    first = last;
  }

  // 3. The critical path: the longest chain by latency (edges go forward).
  std::vector<std::uint64_t> finish(nodes.size(), 0);
  std::vector<std::size_t> parent(nodes.size(), SIZE_MAX);
  std::vector<std::vector<const Edge*>> incoming(nodes.size());
  for (const Edge& e : edges) incoming[e.to].push_back(&e);
  std::size_t end = SIZE_MAX;
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    std::uint64_t start = 0;
    for (const Edge* e : incoming[n]) {
      if (finish[e->from] > start) {
        start = finish[e->from];
        parent[n] = e->from;
      }
    }
    finish[n] = start + nodes[n].latency;
    if (end == SIZE_MAX || finish[n] > finish[end]) end = n;
  }
  std::set<std::size_t> critical;
  for (std::size_t n = end; n != SIZE_MAX; n = parent[n]) critical.insert(n);

  // 4. DOT: a cluster for the program, one inside it per bundle.
  out += fmt::format(
      "  subgraph cluster_{0} {{\n  label=\"{1}: {2} ops in {3} bundles{4}; critical path (red): {5} cycles by "
      "latency\";\n",
      prefix, dot_string(name), total_ops, program.bundles.size(),
      note.empty() ? "" : fmt::format(" (drawn: the first {} bundles)", bundles_drawn),
      end == SIZE_MAX ? 0 : finish[end]);
  first = 0;
  while (first < nodes.size()) {
    const std::size_t b = nodes[first].bundle;
    out +=
        fmt::format("  subgraph cluster_{}b{} {{\n    label=\"bundle {}\"; style=rounded; color=gray;\n", prefix, b, b);
    for (; first < nodes.size() && nodes[first].bundle == b; ++first) {
      std::string text = isa::format_op(*nodes[first].op);
      if (text.size() > 60) text = text.substr(0, 57) + "...";
      out += fmt::format("    {}n{} [label=\"{}\"{}];\n", prefix, first, dot_string(text),
                         critical.count(first) != 0U ? ", color=red, penwidth=2" : "");
    }
    out += "  }\n";
  }
  out += "  }\n";
  for (const Edge& e : edges) {
    const bool on_path = critical.count(e.to) != 0U && parent[e.to] == e.from;
    const char* style = e.kind == EdgeKind::kRegister ? "color=black"
                        : e.kind == EdgeKind::kFlag   ? "color=blue, style=dashed"
                                                      : "color=darkgreen, style=bold";
    out += fmt::format("  {0}n{1} -> {0}n{2} [label=\"{3}\", fontsize=8, {4}{5}];\n", prefix, e.from, e.to,
                       dot_string(e.label), style, on_path ? ", color=red, penwidth=2" : "");
  }
  return note;
}

}  // namespace

std::string program_graph_dot(const std::vector<GraphProgram>& programs, const ChipConfig& chip, std::size_t max_nodes,
                              std::string& note) {
  std::string body;
  std::size_t budget = max_nodes;
  std::vector<std::string> notes;
  std::size_t left_out = 0;
  for (std::size_t i = 0; i < programs.size(); ++i) {
    if (budget == 0) {
      ++left_out;
      continue;
    }
    const std::string n =
        append_program(body, fmt::format("p{}", i), programs[i].name, *programs[i].program, chip, budget);
    if (!n.empty()) notes.push_back(n);
  }
  if (left_out > 0) notes.push_back(fmt::format("{} more program(s) not drawn", left_out));
  note.clear();
  if (!notes.empty()) {
    note = fmt::format("graph: at most {} nodes: ", max_nodes);
    for (std::size_t i = 0; i < notes.size(); ++i) note += (i == 0 ? "" : "; ") + notes[i];
  }
  std::string out = "digraph program {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n";
  out += fmt::format(
      "  label=\"{} program(s); edges: register (black), sync flag (blue, dashed), DMA to its wait (green, bold); "
      "critical path red{}\";\n  labelloc=t;\n",
      programs.size(), note.empty() ? "" : "\\n" + dot_string(note));
  out += body;
  out += "}\n";
  return out;
}

std::string workload_graph_dot(const nlohmann::json& report) {
  std::string out = "digraph workload {\n  rankdir=TB;\n  node [fontname=\"sans-serif\", fontsize=10];\n";
  out += fmt::format(
      "  label=\"workload {} on {} ({}): {} steps run one after another (the chain is the critical path, red); "
      "compute boxes, communication hexagons\";\n  labelloc=t;\n",
      dot_string(report.value("workload", std::string())), dot_string(report.value("topology", std::string())),
      dot_string(report.value("chip", std::string())), report.at("phases").size());
  std::map<std::string, std::size_t> last_user;
  std::size_t index = 0;
  for (const auto& p : report.at("phases")) {
    const bool comm = p.value("kind", std::string()) == "communication";
    out += fmt::format(
        "  s{} [shape={}, style=filled, fillcolor=\"{}\", color=red, penwidth=2, label=\"step {}: {}\\nmeasured {}, "
        "predicted {}\"];\n",
        index, comm ? "hexagon" : "box", comm ? "#fde2c8" : "#d6e6f5", index,
        dot_string(p.value("name", std::string())), format_quantity(p.value("seconds", 0.0), Quantity::kTime),
        format_quantity(p.value("predicted_seconds", 0.0), Quantity::kTime));
    // Buffers from the step just before label the chain's edge; from earlier steps, dashed edges.
    std::string from_previous;
    if (p.contains("buffers")) {
      for (const auto& b : p.at("buffers")) {
        const std::string name = b.get<std::string>();
        const auto it = last_user.find(name);
        if (it != last_user.end() && it->second + 1 == index) {
          from_previous += (from_previous.empty() ? "" : ", ") + name;
        } else if (it != last_user.end()) {
          out += fmt::format("  s{} -> s{} [label=\"{}\", style=dashed, fontsize=8];\n", it->second, index,
                             dot_string(name));
        }
        last_user[name] = index;
      }
    }
    if (index > 0) {
      out += fmt::format("  s{} -> s{} [color=red, penwidth=2, fontsize=8, label=\"{}\"];\n", index - 1, index,
                         dot_string(from_previous));
    }
    ++index;
  }
  out += "}\n";
  return out;
}

void check_graph_path(const std::string& path) {
  if (!ends_with(path, ".dot") && !ends_with(path, ".svg")) {
    throw std::invalid_argument(fmt::format("--graph {}: expected a file ending in .dot or .svg", path));
  }
  api::check_writable("--graph", path);
  if (ends_with(path, ".svg") && find_on_path("dot").empty()) {
    throw std::invalid_argument(
        fmt::format("--graph {}: rendering SVG needs Graphviz's `dot`, which is not on PATH (Debian: apt-get install "
                    "graphviz); --graph FILE.dot writes the graph as DOT text without it",
                    path));
  }
}

std::string write_graph(const std::string& path, const std::string& dot_text) {
  if (dist::world().rank() != 0) return "";  // under mpirun, rank 0 writes (as for every output file)
  if (ends_with(path, ".dot")) {
    const auto error = api::write_text_file("--graph", path, dot_text);
    return error ? *error : "";
  }
  const std::string dot = find_on_path("dot");
  if (dot.empty()) return fmt::format("--graph {}: Graphviz's `dot` is not on PATH", path);
  const std::string source = path + ".dot.tmp";
  if (const auto error = api::write_text_file("--graph", source, dot_text)) return *error;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl(dot.c_str(), "dot", "-Tsvg", "-o", path.c_str(), source.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  const bool ran = pid > 0 && ::waitpid(pid, &status, 0) == pid;
  std::error_code ignored;
  std::filesystem::remove(source, ignored);
  if (!ran || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return fmt::format("--graph {}: `dot -Tsvg` failed (exit status {})", path, ran ? WEXITSTATUS(status) : -1);
  }
  return "";
}

void add_graph_option(boost::program_options::options_description& options, const char* what) {
  options.add_options()("graph", boost::program_options::value<std::string>(), what);
}

std::string write_program_graph(const std::string& path, const std::vector<api::Step>& steps, const ChipConfig& chip) {
  std::vector<GraphProgram> programs;
  for (const auto& s : steps) programs.push_back({s.name, s.program.get()});
  std::string note;
  const std::string dot = program_graph_dot(programs, chip, kGraphMaxNodes, note);
  if (!note.empty()) fmt::print(stderr, "{}\n", note);
  return write_graph(path, dot);
}

}  // namespace tpuemu::cli

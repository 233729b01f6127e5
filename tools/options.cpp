#include "tools/options.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iostream>
#include <sstream>
#include <string_view>

#include "common/parse_number.hpp"

namespace tpuemu::cli {
namespace {

[[noreturn]] void refuse(const std::string& token, const std::string& expected) {
  po::error_with_option_name error("the argument ('%value%') for option '%canonical_option%' is invalid: expected " +
                                   expected);
  error.set_substitute("value", token);
  throw error;
}

const std::string& single_token(const std::vector<std::string>& tokens) {
  if (tokens.size() != 1) throw po::validation_error(po::validation_error::multiple_values_not_allowed);
  return tokens.front();
}

// A whole number within [min, max], read by `parse` (parse_unsigned: "4096",
// "1e6"; parse_bytes: also "64K", "1MiB"); refused as "`noun` >= min" or
// "`noun` from min to max", with `examples` where there are some.
class UnsignedValue : public po::typed_value<std::uint64_t> {
 public:
  using Parse = std::optional<std::uint64_t> (*)(std::string_view);
  UnsignedValue(std::uint64_t min, std::uint64_t max, Parse parse, const char* noun, const char* examples)
      : po::typed_value<std::uint64_t>(nullptr),
        min_(min),
        max_(max),
        parse_(parse),
        noun_(noun),
        examples_(examples) {}

  void xparse(boost::any& store, const std::vector<std::string>& tokens) const override {
    const std::string& token = single_token(tokens);
    const auto value = parse_(token);
    if (!value || *value < min_ || *value > max_) {
      const std::string examples = *examples_ != 0 ? fmt::format("{}; ", examples_) : std::string();
      refuse(token, max_ == std::numeric_limits<std::uint64_t>::max()
                        ? fmt::format("{} >= {} ({}below 2^64)", noun_, min_, examples)
                        : fmt::format("{} from {} to {}{}", noun_, min_, max_,
                                      *examples_ != 0 ? fmt::format(" ({})", examples_) : std::string()));
    }
    store = *value;
  }

 private:
  std::uint64_t min_;
  std::uint64_t max_;
  Parse parse_;
  const char* noun_;
  const char* examples_;
};

class RealValue : public po::typed_value<double> {
 public:
  RealValue(double min, double max) : po::typed_value<double>(nullptr), min_(min), max_(max) {}

  void xparse(boost::any& store, const std::vector<std::string>& tokens) const override {
    const std::string& token = single_token(tokens);
    double value = 0;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
    if (token.empty() || ec != std::errc() || end != token.data() + token.size() || !std::isfinite(value) ||
        value < min_ || value > max_) {
      refuse(token, max_ == std::numeric_limits<double>::max() ? fmt::format("a finite number >= {:g}", min_)
                                                               : fmt::format("a number from {:g} to {:g}", min_, max_));
    }
    store = value;
  }

 private:
  double min_;
  double max_;
};

}  // namespace

po::typed_value<std::uint64_t>* whole_value(std::uint64_t min, std::uint64_t max) {
  // Owned by the option description, as po::value<T>() is.
  return new UnsignedValue(min, max, parse_unsigned, "a whole number", "");
}

po::typed_value<std::uint64_t>* bytes_value(std::uint64_t min, std::uint64_t max) {
  return new UnsignedValue(min, max, parse_bytes, "a number of bytes", "65536, 64K, 1MiB");
}

po::typed_value<double>* real_value(double min, double max) {
  return new RealValue(min, max);
}

namespace {

// Boost's default style, less its guessing: an abbreviation (--no-dat for
// --no-data) is an unknown option, not a silent match of the one it starts.
constexpr int kStyle = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;

// Boost 1.74's error_with_option_name::what() replaces each placeholder
// (%option%, %value%, %original_token%, ...) until none is left, so an argument
// that itself holds one (an unknown option "-%original_token%") makes it loop
// forever. When an argument holds a '%', the message therefore comes from the
// same parse of the arguments with every '%' replaced by a character no argument
// holds, and that character is turned back into '%' in the text.
std::string option_error_message(const po::error& error, const std::vector<std::string>& args,
                                 const po::options_description& options,
                                 const po::positional_options_description& positional) {
  const bool has_percent =
      std::any_of(args.begin(), args.end(), [](const std::string& a) { return a.find('%') != std::string::npos; });
  if (!has_percent) return error.what();
  char sentinel = 0;
  for (char c = 1; c < 32 && sentinel == 0; ++c) {
    if (std::none_of(args.begin(), args.end(), [c](const std::string& a) { return a.find(c) != std::string::npos; })) {
      sentinel = c;
    }
  }
  if (sentinel != 0) {
    std::vector<std::string> escaped = args;
    for (auto& a : escaped) std::replace(a.begin(), a.end(), '%', sentinel);
    try {
      po::variables_map vm;
      po::store(po::command_line_parser(escaped).options(options).positional(positional).style(kStyle).run(), vm);
      po::notify(vm);
    } catch (const po::error& same) {
      std::string message = same.what();
      std::replace(message.begin(), message.end(), sentinel, '%');
      return message;
    }
  }
  return "the command line could not be parsed (an argument holding '%' made the parser's own message unusable)";
}

}  // namespace

std::optional<po::variables_map> parse_options(const std::string& name, const std::string& synopsis,
                                               const std::vector<std::string>& args, po::options_description& options,
                                               const po::positional_options_description& positional, bool& help_shown) {
  options.add_options()("help,h", "show this help");
  help_shown = false;
  std::ostringstream usage;
  usage << "usage: tpuemu " << name << " " << synopsis << "\n\n" << options;
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(options).positional(positional).style(kStyle).run(), vm);
    if (vm.count("help") != 0U) {
      std::cout << usage.str();
      help_shown = true;
      return std::nullopt;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << fmt::format("tpuemu {}: {}\n\n", name, option_error_message(e, args, options, positional))
              << usage.str();
    return std::nullopt;
  }
  return vm;
}

void add_max_cycles_option(po::options_description& options) {
  options.add_options()("max-cycles", whole_value(1)->default_value(chip::RunOptions::kDefaultMaxCycles),
                        "stop the run with a fault when a core reaches this cycle (an endless loop ends within "
                        "seconds on one chip; 1e8 cycles are 67 ms on a v5e)");
}

void add_predicted_max_cycles_option(po::options_description& options, double headroom) {
  options.add_options()("max-cycles", whole_value(1),
                        fmt::format("stop a run with a fault when a core reaches this cycle (default: {:g} x the "
                                    "predicted cycles, at least {})",
                                    headroom, chip::RunOptions::kDefaultMaxCycles)
                            .c_str());
}

std::uint64_t max_cycles(const po::variables_map& vm) {
  return vm["max-cycles"].as<std::uint64_t>();
}

void add_chip_options(po::options_description& options) {
  options.add_options()(
      "chip", po::value<std::string>(),
      fmt::format("chip preset name ({}) or path of a chip JSON file", fmt::join(preset_names(), ", ")).c_str())(
      "chip-file", po::value<std::string>(), "JSON chip file overriding the preset (may name its own \"base\")")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "override one parameter, e.g. --set hbm.bandwidth=1.0e12 (repeatable; see `tpuemu params`)");
}

ChipRequest chip_request(const po::variables_map& vm) {
  ChipRequest r;
  if (vm.count("chip") != 0U) r.preset = vm["chip"].as<std::string>();
  if (vm.count("chip-file") != 0U) r.chip_file = vm["chip-file"].as<std::string>();
  if (vm.count("set") != 0U) r.overrides = vm["set"].as<std::vector<std::string>>();
  return r;
}

void add_topology_options(po::options_description& options) {
  options.add_options()("wrap", po::value<std::string>(),
                        "axes with wraparound links, e.g. x,z (overrides the preset's rule)")(
      "no-wrap", "no wraparound on any axis")("force", "allow more chips than the preset's largest slice")(
      "routing", po::value<std::string>()->default_value("dimension-order"), "routing policy");
}

void add_partition_option(po::options_description& options) {
  options.add_options()("partition", po::value<std::string>(),
                        "under mpirun: how the pod's chips split over the ranks: slab:AXIS, block:AxBxC or "
                        "file:PATH (default: contiguous chip ids)");
}

std::string partition_option(const po::variables_map& vm) {
  return vm.count("partition") != 0U ? vm["partition"].as<std::string>() : std::string();
}

ici::TopologyRequest topology_request_from(const po::variables_map& vm, const std::string& shape) {
  ici::TopologyRequest request;
  request.shape = shape;
  request.force = vm.count("force") != 0U;
  const std::size_t axes = static_cast<std::size_t>(std::count(shape.begin(), shape.end(), 'x')) + 1;
  if (vm.count("no-wrap") != 0U && vm.count("wrap") != 0U) {
    throw ici::TopologyError(
        fmt::format("--wrap {} and --no-wrap contradict each other: give one of them", vm["wrap"].as<std::string>()));
  }
  if (vm.count("no-wrap") != 0U) request.wrap = std::vector<bool>(axes, false);
  if (vm.count("wrap") != 0U) request.wrap = ici::parse_wrap_axes(vm["wrap"].as<std::string>(), axes);
  return request;
}

ici::Topology topology_from(const po::variables_map& vm, const std::string& shape, const ChipConfig& chip) {
  return ici::make_topology(topology_request_from(vm, shape), chip);
}

}  // namespace tpuemu::cli

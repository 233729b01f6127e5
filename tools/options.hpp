// Shared option handling of the subcommands (Boost.Program_options).
#pragma once

#include <boost/program_options.hpp>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "chip/run_options.hpp"
#include "common/presets.hpp"
#include "ici/topology.hpp"

namespace tpuemu::cli {

namespace po = boost::program_options;

// Parses `args` for command `name`. Prints "tpuemu NAME: <error>" and the
// command's usage to stderr and returns nullopt on a bad flag (the caller exits
// with kExitBadInput); prints usage to stdout and returns nullopt with
// `help_shown` set on --help.
std::optional<po::variables_map> parse_options(const std::string& name, const std::string& synopsis,
                                               const std::vector<std::string>& args, po::options_description& options,
                                               const po::positional_options_description& positional, bool& help_shown);

// The value of a whole-number option: digits (or 1e6-style whole numbers, see
// common/parse_number.hpp) within [min, max]. "-1", "1.5", "12abc" and values
// out of range are refused at parse time with the option's name and range.
po::typed_value<std::uint64_t>* whole_value(std::uint64_t min = 0,
                                            std::uint64_t max = std::numeric_limits<std::uint64_t>::max());
// The value of a byte-count option: a whole number with an optional binary
// suffix (common/parse_number.hpp parse_bytes: 65536, 64K, 1MiB) within [min, max].
po::typed_value<std::uint64_t>* bytes_value(std::uint64_t min = 0,
                                            std::uint64_t max = std::numeric_limits<std::uint64_t>::max());
// The value of a real-number option: finite, within [min, max], no trailing text.
po::typed_value<double>* real_value(double min, double max);

// Adds --max-cycles (the cycle limit of a run, chip::RunOptions::max_cycles).
void add_max_cycles_option(po::options_description& options);
// --max-cycles without a value of its own: the run's limit follows its
// prediction, `headroom` x the predicted cycles (api::CollectiveJob::max_cycles).
void add_predicted_max_cycles_option(po::options_description& options, double headroom);
std::uint64_t max_cycles(const po::variables_map& vm);

// Adds --chip, --chip-file and --set to `options`.
void add_chip_options(po::options_description& options);
// Builds the ChipRequest from the variables added by add_chip_options.
ChipRequest chip_request(const po::variables_map& vm);
// Adds --wrap, --no-wrap, --force and --routing (the topology shape itself is
// each command's own option).
void add_topology_options(po::options_description& options);
// Adds --partition (how mpirun's ranks split a pod; ici/partition.hpp).
void add_partition_option(po::options_description& options);
// The --partition value, "" when not given.
std::string partition_option(const po::variables_map& vm);
// The request for topology `shape` with the wrap/force options of `vm`
// (unchecked: ici::make_topology checks it against a chip). Throws ici::TopologyError.
ici::TopologyRequest topology_request_from(const po::variables_map& vm, const std::string& shape);
// The checked topology `shape` on `chip` with the wrap/force options of `vm`.
// Throws ici::TopologyError.
ici::Topology topology_from(const po::variables_map& vm, const std::string& shape, const ChipConfig& chip);

}  // namespace tpuemu::cli

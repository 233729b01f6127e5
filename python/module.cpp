// tpuemu._core: the run API (api/run.hpp) for Python. The Python-facing
// names, docstrings and exceptions live in python/tpuemu/__init__.py; this
// module converts numpy arrays and maps the API's errors.
//
// Every run happens in a forked child process (api::Isolation::kChild):
// SystemC elaborates once per process, and an emulator crash becomes an
// exception here instead of killing the interpreter.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "api/collective.hpp"
#include "api/environment.hpp"
#include "api/report.hpp"
#include "api/run.hpp"
#include "api/run_case.hpp"
#include "common/presets.hpp"
#include "isa/assembler.hpp"
#include "workloads/run.hpp"

namespace py = pybind11;
using namespace tpuemu;

// libsystemc.so's main() calls sc_main(); a Python process never runs that
// main(), but the symbol must resolve when the module is loaded.
__attribute__((visibility("default"))) int sc_main(int /*argc*/, char* /*argv*/[]) {
  return 1;
}

namespace {

NpyDtype dtype_of(const py::array& a) {
  const py::dtype d = a.dtype();
  const char kind = d.kind();
  const auto size = d.itemsize();
  if (kind == 'f' && size == 4) return NpyDtype::kFloat32;
  if (kind == 'f' && size == 8) return NpyDtype::kFloat64;
  if (kind == 'u' && size == 1) return NpyDtype::kUint8;
  if (kind == 'u' && size == 2) return NpyDtype::kUint16;
  if (kind == 'u' && size == 4) return NpyDtype::kUint32;
  if (kind == 'i' && size == 4) return NpyDtype::kInt32;
  if (kind == 'i' && size == 8) return NpyDtype::kInt64;
  if (kind == 'b') return NpyDtype::kBool;
  throw api::BadInput("numpy dtype " + d.attr("name").cast<std::string>() +
                      " is not one tpuemu reads (float32, float64, uint8, uint16, uint32, int32, int64, bool; "
                      "bf16/f8 as uint16/uint8 bit patterns or float32 values)");
}

NpyArray to_npy(const py::array& in) {
  NpyArray out;
  out.dtype = dtype_of(in);
  // C order, native (little-endian on every host tpuemu builds for).
  const py::array a = py::array::ensure(in, py::array::c_style | py::array::forcecast);
  for (py::ssize_t i = 0; i < a.ndim(); ++i) out.shape.push_back(static_cast<std::uint64_t>(a.shape(i)));
  out.data.resize(static_cast<std::size_t>(a.nbytes()));
  if (!out.data.empty()) std::memcpy(out.data.data(), a.data(), out.data.size());
  return out;
}

py::array from_npy(const NpyArray& a) {
  std::string format;
  switch (a.dtype) {
    case NpyDtype::kFloat32:
      format = "float32";
      break;
    case NpyDtype::kFloat64:
      format = "float64";
      break;
    case NpyDtype::kUint8:
      format = "uint8";
      break;
    case NpyDtype::kUint16:
      format = "uint16";
      break;
    case NpyDtype::kUint32:
      format = "uint32";
      break;
    case NpyDtype::kInt32:
      format = "int32";
      break;
    case NpyDtype::kInt64:
      format = "int64";
      break;
    case NpyDtype::kBool:
      format = "bool";
      break;
  }
  std::vector<py::ssize_t> shape(a.shape.begin(), a.shape.end());
  py::array out(py::dtype(format), shape);
  if (!a.data.empty()) std::memcpy(out.mutable_data(), a.data.data(), a.data.size());
  return out;
}

// The native side of a Program: the assembled program and the name it came from.
struct Program {
  std::shared_ptr<const isa::Program> program;
  std::string name;
};

Program load_program(const std::string& path) {
  return {api::load(path), path};
}
Program assemble_text(const std::string& text, const std::string& name) {
  return {api::assemble(text, name), name};
}

// What Python sees of a result: plain values and dicts of arrays.
py::dict fault_dict(const api::FaultSite& fault) {
  py::dict f;
  f["message"] = fault.message;
  f["chip"] = fault.chip ? py::cast(*fault.chip) : py::none();
  f["core"] = fault.core ? py::cast(*fault.core) : py::none();
  f["bundle"] = fault.bundle ? py::cast(*fault.bundle) : py::none();
  f["file"] = fault.file;
  f["line"] = fault.line;
  f["col"] = fault.col;
  return f;
}

py::dict result_dict(const api::Result& r) {
  py::dict d;
  d["cycles"] = r.cycles;
  d["seconds"] = r.seconds;
  d["report"] = py::module_::import("json").attr("loads")(r.report.dump());
  py::dict outputs;
  py::dict bits;
  for (const auto& [name, out] : r.outputs) {
    py::list values;
    py::list raw;
    for (std::uint32_t c = 0; c < out.device.size(); ++c) {
      values.append(from_npy(r.output(name, c, false)));
      raw.append(from_npy(r.output(name, c, true)));
    }
    outputs[py::str(name)] = values;
    bits[py::str(name)] = raw;
  }
  d["outputs"] = outputs;
  d["bits"] = bits;
  d["fault"] = r.fault ? py::object(fault_dict(*r.fault)) : py::object(py::none());
  return d;
}

// Every entry that runs asks for a chip: the TPUEMU_* variables are checked here too.
ChipRequest chip_request(const std::string& preset, const std::string& chip_file,
                         const std::vector<std::string>& overrides) {
  if (const auto problem = api::environment_problem()) throw api::BadInput(*problem);
  return ChipRequest{preset, chip_file, overrides};
}

ici::TopologyRequest topology_request(const std::string& shape, const std::string& wrap, bool force) {
  ici::TopologyRequest t;
  t.shape = shape;
  t.force = force;
  if (!wrap.empty()) {
    const std::size_t axes = static_cast<std::size_t>(std::count(shape.begin(), shape.end(), 'x')) + 1;
    if (wrap == "none") {
      t.wrap = std::vector<bool>(axes, false);
    } else {
      try {
        t.wrap = ici::parse_wrap_axes(wrap, axes);
      } catch (const std::exception& e) {
        throw api::BadInput(e.what());
      }
    }
  }
  return t;
}

// steps: list of (Program, {operand index: buffer name}); inputs: {buffer: [arrays]}.
py::dict run(const std::vector<std::pair<Program, std::map<std::uint32_t, std::string>>>& steps,
             const std::string& chip, const std::string& chip_file, const std::vector<std::string>& overrides,
             const std::string& topology, const std::string& wrap, bool force, const std::string& routing,
             const std::map<std::string, std::vector<py::array>>& inputs, bool no_data, bool strict,
             std::uint64_t max_cycles, std::uint64_t quantum, const std::string& trace, const std::string& vcd,
             const std::string& memory_profile) {
  api::Job job;
  job.chip = chip_request(chip, chip_file, overrides);
  if (!topology.empty()) {
    job.topology = topology_request(topology, wrap, force);
    job.routing = routing;
  }
  for (const auto& [program, buffers] : steps) job.steps.push_back({program.program, program.name, buffers});
  for (const auto& [name, arrays] : inputs) {
    api::Input& input = job.inputs[name];
    input.origin = "input '" + name + "'";
    for (const auto& a : arrays) input.per_chip.push_back(to_npy(a));
  }
  job.options.no_data = no_data;
  job.options.strict = strict;
  if (max_cycles != 0) job.options.max_cycles = max_cycles;
  job.options.quantum_cycles = quantum;
  job.observers.trace = trace;
  job.observers.vcd = vcd;
  job.observers.memory_profile = memory_profile;
  job.isolation = api::Isolation::kChild;
  api::Result result;
  {
    py::gil_scoped_release release;
    result = api::run(job);
  }
  return result_dict(result);
}

// One collective per (algorithm, size), planned as `tpuemu collective` plans
// them (api::plan_collective_runs: --algo auto and --proto auto); a list of
// row dicts (the pod report's "collective" fields plus cycles, seconds,
// report, host cost, outputs when asked, the NCCL protocol and the auto
// predictions).
py::list collective(const std::string& op, const std::string& topology, const std::string& sizes,
                    const std::string& chip, const std::string& chip_file, const std::vector<std::string>& overrides,
                    const std::string& wrap, bool force, const std::string& routing, const std::string& axes,
                    const std::string& algo, const std::string& proto, const std::string& dtype,
                    const std::string& piece, bool no_data, std::uint64_t max_cycles, bool keep_outputs) {
  api::CollectiveJob job;
  job.chip = chip_request(chip, chip_file, overrides);
  job.topology = topology_request(topology, wrap, force);
  job.routing = routing;
  job.no_data = no_data;
  if (max_cycles != 0) job.max_cycles = max_cycles;
  job.keep_outputs = keep_outputs;
  const api::CollectiveSetup setup = api::check_collective_setup(job);
  job.spec.op = op;
  job.spec.dtype = dtype;
  if (axes.empty()) {
    for (std::size_t a = 0; a < setup.topology.axis_count(); ++a) job.spec.axes.push_back(a);
  } else {
    try {
      job.spec.axes = ici::parse_axis_list(axes, setup.topology.axis_count(), "axes", "name them like y or x,y");
    } catch (const std::exception& e) {
      throw api::BadInput(e.what());
    }
  }
  if (!piece.empty()) job.spec.piece_bytes = api::parse_collective_size(piece);
  // Every (algorithm, protocol, size) chosen and checked before the first run, as `tpuemu collective` does.
  const std::vector<api::PlannedCollective> runs =
      api::plan_collective_runs(job, setup, algo, proto, api::parse_collective_sizes(sizes));
  py::list rows;
  for (const api::PlannedCollective& p : runs) {
    api::CollectiveResult r;
    {
      py::gil_scoped_release release;
      r = api::run_collective(api::planned_collective_job(job, p));
    }
    py::dict row = result_dict(r.run);
    if (keep_outputs && r.padded_bytes != p.bytes) {
      // A padded run: each chip's output is its user bytes (a 1-D operand: its first elements).
      const std::uint64_t element = programs::collective_element_bytes(job.spec.dtype);
      for (const char* key : {"outputs", "bits"}) {
        py::list cut;
        const py::dict buffers = row[key];
        const py::list whole = buffers["1"];
        for (std::size_t c = 0; c < r.output_bytes.size(); ++c) {
          cut.append(whole[c][py::slice(0, static_cast<py::ssize_t>(r.output_bytes[c] / element), 1)]);
        }
        buffers["1"] = cut;
      }
    }
    py::dict fields = py::module_::import("json").attr("loads")(r.run.report["collective"].dump());
    for (auto item : fields) row[item.first] = item.second;
    row["proto"] = p.protocol.empty() ? py::object(py::none()) : py::object(py::str(p.protocol));
    py::dict predictions;
    for (const auto& [name, t] : p.predictions) predictions[py::str(name)] = t;
    row["auto_predictions"] = predictions;
    row["ok"] = r.ok;
    row["host_seconds"] = r.host_seconds;
    row["host_peak_rss_bytes"] = r.run.host.peak_rss_bytes;
    row["program"] = r.program;  // the generated LLO program that ran
    // What tpuemu.run(row["program"], set=...) needs beyond the chip asked for
    // to run it as it ran (a switched fabric's NCCL protocol and channels).
    row["run_overrides"] = r.run_overrides;
    rows.append(row);
  }
  return rows;
}

// A registered workload (workloads/run.hpp): its report as a dict, with
// "fault" a fault dict (or None) instead of the message.
py::dict workload(const std::string& name, const std::string& topology, const std::string& chip,
                  const std::string& chip_file, const std::vector<std::string>& overrides, const std::string& wrap,
                  bool force, const std::string& routing, const std::map<std::string, std::string>& options,
                  bool no_data, std::uint64_t max_cycles, const std::string& trace) {
  workloads::WorkloadRequest request;
  request.name = name;
  request.chip = chip_request(chip, chip_file, overrides);
  request.topology = topology_request(topology, wrap, force);
  request.routing = routing;
  request.options = options;
  request.no_data = no_data;
  if (max_cycles != 0) request.max_cycles = max_cycles;
  request.observers.trace = trace;
  request.isolation = api::Isolation::kChild;
  workloads::WorkloadResult r;
  {
    py::gil_scoped_release release;
    r = workloads::run_workload(request);
  }
  py::dict d = py::module_::import("json").attr("loads")(r.report.dump());
  d["fault"] = r.fault ? py::object(fault_dict(*r.fault)) : py::object(py::none());
  return d;
}

py::list workload_list() {
  return py::module_::import("json").attr("loads")(workloads::workload_list().dump());
}

// A case of the dump corpus (api/run_case.hpp): the run's dict plus the check.
py::dict run_case(const std::string& dir, const std::string& chip, const std::string& chip_file,
                  const std::vector<std::string>& overrides, bool strict, std::uint64_t max_cycles,
                  std::uint64_t quantum, double rtol, double atol, const std::map<std::string, std::string>& row_max,
                  const std::string& trace, const std::string& vcd, const std::string& memory_profile, bool tlp) {
  api::CaseResult r;
  {
    py::gil_scoped_release release;
    api::CaseOptions options;
    options.rtol = rtol;
    options.atol = atol;
    options.row_max = row_max;
    api::CaseJob c = api::load_case(dir, options);
    if (tlp) api::use_top_level_program(c);
    c.job.chip = chip_request(chip, chip_file, overrides);
    c.job.options.strict = strict;
    if (max_cycles != 0) c.job.options.max_cycles = max_cycles;
    c.job.options.quantum_cycles = quantum;
    c.job.observers.trace = trace;
    c.job.observers.vcd = vcd;
    c.job.observers.memory_profile = memory_profile;
    c.job.isolation = api::Isolation::kChild;
    r = api::run_case(c);
  }
  py::dict d = result_dict(r.run);
  d["name"] = r.name;
  d["passed"] = r.passed;
  d["failure"] = r.failure;
  d["compared"] = r.compared;
  d["elements"] = r.elements;
  d["mismatches"] = r.mismatches;
  d["first_mismatch"] = r.first_mismatch ? py::cast(*r.first_mismatch) : py::object(py::none());
  d["first_mismatch_index"] =
      r.first_mismatch ? py::object(py::tuple(py::cast(r.first_mismatch_index))) : py::object(py::none());
  d["first_got"] = r.first_got;
  d["first_expected"] = r.first_expected;
  d["exact"] = r.exact;
  d["rtol"] = r.rtol;
  d["atol"] = r.atol;
  d["max_relative_error"] = r.max_relative_error;
  d["max_ulp"] = r.max_ulp;
  d["summary"] = r.text();
  // check_case reads the output of every run that did not fault.
  d["output"] = r.run.fault ? py::none() : py::object(from_npy(r.output));
  d["expected"] = r.run.fault ? py::none() : py::object(from_npy(r.expected));
  return d;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  m.doc() = "tpuemu's native run API (use the tpuemu package, not this module)";

  // Python classes are defined in tpuemu/__init__.py and registered here, so
  // errors thrown by the API arrive as them.
  static py::object bad_input;
  static py::object assembly_error;
  static py::object internal_error;
  m.def("_register_errors", [](py::object bad, py::object assembly, py::object internal) {
    bad_input = std::move(bad);
    assembly_error = std::move(assembly);
    internal_error = std::move(internal);
  });
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const api::AssemblyError& e) {
      py::object err = assembly_error(e.what(), e.file, e.line, e.col);
      PyErr_SetObject(assembly_error.ptr(), err.ptr());
    } catch (const api::BadInput& e) {
      PyErr_SetString(bad_input.ptr(), e.what());
    } catch (const api::InternalError& e) {
      PyErr_SetString(internal_error.ptr(), e.what());
    }
  });

  py::class_<Program>(m, "Program")
      .def_readonly("name", &Program::name)
      .def_property_readonly("bundles", [](const Program& p) { return p.program->bundles.size(); })
      .def("disassemble", [](const Program& p) { return isa::disassemble(*p.program); });
  m.def("load", &load_program, py::arg("path"));
  m.def("assemble", &assemble_text, py::arg("text"), py::arg("name"));
  m.def("chips", &preset_names);
  m.def("run", &run, py::arg("steps"), py::arg("chip"), py::arg("chip_file"), py::arg("overrides"), py::arg("topology"),
        py::arg("wrap"), py::arg("force"), py::arg("routing"), py::arg("inputs"), py::arg("no_data"), py::arg("strict"),
        py::arg("max_cycles"), py::arg("quantum"), py::arg("trace"), py::arg("vcd"), py::arg("memory_profile"));
  m.def("collective", &collective, py::arg("op"), py::arg("topology"), py::arg("sizes"), py::arg("chip"),
        py::arg("chip_file"), py::arg("overrides"), py::arg("wrap"), py::arg("force"), py::arg("routing"),
        py::arg("axes"), py::arg("algo"), py::arg("proto"), py::arg("dtype"), py::arg("piece"), py::arg("no_data"),
        py::arg("max_cycles"), py::arg("keep_outputs"));
  m.def("workload", &workload, py::arg("name"), py::arg("topology"), py::arg("chip"), py::arg("chip_file"),
        py::arg("overrides"), py::arg("wrap"), py::arg("force"), py::arg("routing"), py::arg("options"),
        py::arg("no_data"), py::arg("max_cycles"), py::arg("trace"));
  m.def("workloads", &workload_list);
  m.def("run_case", &run_case, py::arg("dir"), py::arg("chip"), py::arg("chip_file"), py::arg("overrides"),
        py::arg("strict"), py::arg("max_cycles"), py::arg("quantum"), py::arg("rtol"), py::arg("atol"),
        py::arg("row_max"), py::arg("trace"), py::arg("vcd"), py::arg("memory_profile"), py::arg("tlp"));
  m.attr("report_schema_version") = api::kReportSchemaVersion;
}

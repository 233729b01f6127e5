// The roofline prediction of a run (facts.md "Rooflines"): T_math from FLOPs
// and peak throughput, T_comms from HBM bytes and bandwidth; the prediction is
// their maximum (the lower bound when compute and transfers overlap fully).
#pragma once

#include <string>

#include "common/chip_config.hpp"

namespace tpuemu::api {

struct Roofline {
  double mxu_flops = 0;
  double vpu_flops = 0;
  double hbm_bytes = 0;
  double mxu_seconds = 0;  // mxu_flops / peak bf16 FLOP/s
  double vpu_seconds = 0;  // vpu_flops / VPU f32 FLOP/s (VALU slots x 1024 lanes x clock per core)
  double hbm_seconds = 0;  // hbm_bytes / HBM bandwidth
  double predicted_seconds = 0;
  std::string bound;  // "MXU compute", "VPU compute" or "HBM bandwidth"
  double measured_seconds = 0;
  [[nodiscard]] double measured_over_predicted() const {
    return predicted_seconds > 0 ? measured_seconds / predicted_seconds : 0;
  }
};

double vpu_peak_flops(const ChipConfig& chip);
Roofline compute_roofline(const ChipConfig& chip, double mxu_flops, double vpu_flops, double hbm_bytes,
                          double measured_seconds);

}  // namespace tpuemu::api

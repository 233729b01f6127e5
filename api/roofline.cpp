#include "api/roofline.hpp"

namespace tpuemu::api {

double vpu_peak_flops(const ChipConfig& chip) {
  return static_cast<double>(chip.tensorcores_per_chip * chip.slot_capacity_of(SlotClass::kValu) * chip.vpu.sublanes *
                             chip.vpu.lanes) *
         chip.clock_hz;
}

Roofline compute_roofline(const ChipConfig& chip, double mxu_flops, double vpu_flops, double hbm_bytes,
                          double measured_seconds) {
  Roofline r;
  r.mxu_flops = mxu_flops;
  r.vpu_flops = vpu_flops;
  r.hbm_bytes = hbm_bytes;
  // A chip without MXUs (the GPU presets) runs no MXU op: the checker refuses them.
  r.mxu_seconds = chip.peak_bf16_flops() > 0 ? mxu_flops / chip.peak_bf16_flops() : 0;
  r.vpu_seconds = vpu_flops / vpu_peak_flops(chip);
  r.hbm_seconds = hbm_bytes / chip.hbm.bandwidth;
  r.predicted_seconds = r.mxu_seconds;
  r.bound = "MXU compute";
  if (r.vpu_seconds > r.predicted_seconds) {
    r.predicted_seconds = r.vpu_seconds;
    r.bound = "VPU compute";
  }
  if (r.hbm_seconds > r.predicted_seconds) {
    r.predicted_seconds = r.hbm_seconds;
    r.bound = "HBM bandwidth";
  }
  if (r.predicted_seconds <= 0) r.bound = "nothing";  // no FLOP, no HBM byte: nothing bounds the time
  r.measured_seconds = measured_seconds;
  return r;
}

}  // namespace tpuemu::api

// Fabric kinds "node" and "nvl": one NVSwitch domain (an HGX node of up to 8
// GPUs, a GB200 NVL72 rack of 72), topology x = the chip. Every chip has, to
// every switch s of the domain, fabric.switch_links[s] NVLinks, modelled as
// one link each way of that many times ici.link_bandwidth (the links of one
// chip-switch pair share the traffic). A transfer is striped over the
// switches in proportion to those counts (path s: chip -> switch s -> chip),
// as the hardware sprays its packets over all links.
#include <memory>

#include "ici/fabric.hpp"

namespace tpuemu::ici {

namespace {

class SwitchedDomainFabric final : public Fabric {
 public:
  SwitchedDomainFabric(const Topology& topology, const ChipConfig& chip, std::string_view kind)
      : Fabric(topology), kind_(kind) {
    domain_ = add_switched_domain(chip, 0, 1, topology.chip_count(), "");
  }

  [[nodiscard]] std::string_view kind() const override { return kind_; }
  [[nodiscard]] const Domain* switched_domain(ChipId /*chip*/) const override { return &domain_; }

  void paths(ChipId from, ChipId to, std::vector<Path>& out) const override {
    out.clear();
    for (std::size_t s = 0; s < domain_.switches.size(); ++s) {
      out.push_back(Path{{domain_.up[s][from.value()], domain_.down[s][to.value()]}, domain_.weights[s]});
    }
  }

 private:
  std::string kind_;
  Domain domain_;
};

class SwitchedDomainKind final : public FabricKind {
 public:
  explicit SwitchedDomainKind(std::string name) : name_(std::move(name)) {}
  [[nodiscard]] std::string_view name() const override { return name_; }
  [[nodiscard]] std::unique_ptr<Fabric> build(const Topology& topology, const ChipConfig& chip,
                                              std::string_view /*routing*/) const override {
    if (!chip.fabric.switched()) {
      throw TopologyError(fmt_message(topology, chip));
    }
    return std::make_unique<SwitchedDomainFabric>(topology, chip, name_);
  }

 private:
  static std::string fmt_message(const Topology& topology, const ChipConfig& chip) {
    return "topology '" + topology.shape() + "' on " + chip.name + ": " + chip.name + " has no NVSwitch (fabric.kind " +
           chip.fabric.kind + ")";
  }
  std::string name_;
};

const FabricKindRegistrar kNode{std::make_unique<SwitchedDomainKind>("node")};
const FabricKindRegistrar kNvl{std::make_unique<SwitchedDomainKind>("nvl")};

}  // namespace

}  // namespace tpuemu::ici

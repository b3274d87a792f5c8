package channels

import (
	"testing"

	"herald/simulator"
)

func TestSandboxFaults(t *testing.T) {
	t.Parallel()
	rig := startSim(t, simulator.Options{})
	runFaultTable(t, rig, adapterCase{platform: "sandbox", sender: &Sandbox{Sim: rig.sim}, to: "E1001",
		retryAfter: true, providerID: true})
}

package bench

import "herald/test/harness"

// The benchmarks call the shared harness (test/harness, which the end-to-end tests in
// test/e2e use too) by the names it had when both lived in one package.

const testAdminPassword = harness.AdminPassword

type (
	running = harness.Running
	process = harness.Process
)

var (
	testEnv           = harness.TestEnv
	embeddedEnv       = harness.EmbeddedEnv
	needMySQLAndRedis = harness.NeedMySQLAndRedis
	envInt            = harness.EnvInt
	envDuration       = harness.EnvDuration
	startHerald       = harness.StartHerald
	startHeraldAs     = harness.StartHeraldAs
	sweepAtOnce       = harness.SweepAtOnce
	freeAddr          = harness.FreeAddr
	waitHTTP          = harness.WaitHTTP
	heraldBinary      = harness.HeraldBinary
	processEnv        = harness.ProcessEnv
	startRoleUnder    = harness.StartRoleUnder
	windowOracle      = harness.WindowOracle
	intakeOf          = harness.IntakeOf
	killWorkerMidRun  = harness.KillWorkerMidRun
	burstModes        = harness.BurstModes
	runBurst          = harness.RunBurst
	stepLateness      = harness.StepLateness
	noticesPerPerson  = harness.NoticesPerPerson
)

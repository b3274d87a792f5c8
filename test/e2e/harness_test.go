package main

import "herald/test/harness"

// The tests call the shared harness (test/harness, which the benchmarks in bench use
// too) by the names it had when it lived in this package.

const testAdminPassword = harness.AdminPassword

type (
	running   = harness.Running
	browser   = harness.Browser
	apiClient = harness.APIClient
	process   = harness.Process
	faultRig  = harness.FaultRig
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
	newBrowser        = harness.NewBrowser
	newAPIKey         = harness.NewAPIKey
	freeAddr          = harness.FreeAddr
	waitHTTP          = harness.WaitHTTP
	heraldBinary      = harness.HeraldBinary
	processEnv        = harness.ProcessEnv
	startRole         = harness.StartRole
	startWorkers      = harness.StartWorkers
	windowOracle      = harness.WindowOracle
	newFaultRig       = harness.NewFaultRig
	newRigAt          = harness.NewRigAt
	intakeOf          = harness.IntakeOf
	splitRolesMidRun  = harness.SplitRolesMidRun
	killWorkerMidRun  = harness.KillWorkerMidRun
	burstModes        = harness.BurstModes
	runBurst          = harness.RunBurst
	stepLateness      = harness.StepLateness
	noticesPerPerson  = harness.NoticesPerPerson
	waitDelivered     = harness.WaitDelivered
)

// Package audit is who changed what: the Actor behind every change, the change runner
// that writes a change's rows and its audit entries in one transaction and runs its
// effects after the commit, and the audit log itself, its entries and their list.
//
// Every write the console, the API and the command line make goes through Run: the
// domain's service validates its input, then Run runs the rows and their entries in one
// transaction; handlers and commands only parse input, name the Actor, and render what
// comes back.
package audit

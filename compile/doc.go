// Package compile turns a checked chock.zon model, with its org ceilings,
// into Rego v1 modules, data and a standard OPA bundle (SPEC §5–7). It is
// the second stage of the one-way flow zon → compile → eval → runtime → cmd.
package compile

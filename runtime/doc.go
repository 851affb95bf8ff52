// Package runtime runs agent sessions under a compiled policy: brokered
// actions through one interceptor chain, secrets injected and redacted, MCP
// servers started and reached under policy, every event logged.
package runtime

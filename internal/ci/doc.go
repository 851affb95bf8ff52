// Package ci holds the tests of chock's CI integrations, which are files
// rather than Go code: the composite GitHub Action (action.yml at the
// repository root), the example workflow of docs/ci.md, and the
// pre-commit hooks (.pre-commit-hooks.yaml). Its tests run them as GitHub
// and pre-commit would, against a copy of examples/ in a temporary git
// repository, with chock built from this module.
package ci

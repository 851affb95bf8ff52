// Package eval answers decisions from a compiled policy through embedded
// OPA, and explains them: the deciding rule in every layer, the layer that
// capped the result, and the edit that would permit the action.
package eval

package config

// The field reference of chock.zon and org.zon: every block and field the
// decoder reads, with its type, default, an example and the lint codes
// that guard it, read from the same tables the decoder walks (blocks.go).
// docs/chock-zon.md is generated from it (lint's ReferenceMarkdown, which
// knows the codes); compile/lint's tests check that it lists exactly the
// fields the decoder reports as known, that every code it names is in
// lint's catalog and that every catalog code is named.

// RefBlock is one block of a file: the file itself, a struct or the
// entries of a list of structs.
type RefBlock struct {
	// File is "chock.zon" or "org.zon".
	File string
	// Path is where the block is: "" for the file itself, "policy", or
	// "secrets[]" for each entry of the list .secrets.
	Path    string
	Summary string
	// Example is a whole document that writes every field of the block.
	Example string
	// Codes are the lint codes about the block as a whole.
	Codes  []string
	Fields []RefField
}

// RefField is one field of a block.
type RefField struct {
	Name string
	Type string
	// Default is what an unwritten field means; "required" when it must
	// be written.
	Default string
	// Example is a value as it would be written after .name =.
	Example string
	Summary string
	Codes   []string
}

// Reference is every block of chock.zon, then of org.zon, in the order
// docs/chock-zon.md shows them.
var Reference = append([]RefBlock{
	configBlock.ref("chock.zon", ""),
	policyBlock.ref("chock.zon", "policy"),
	ruleBlock.ref("chock.zon", "policy.rules[]"),
	secretBlock.ref("chock.zon", "secrets[]"),
	serverBlock.ref("chock.zon", "mcp_servers[]"),
	programBlock.ref("chock.zon", "programs[]"),
	credentialsBlock.ref("chock.zon", "credentials"),
	expectationBlock.ref("chock.zon", "expect[]"),
	orgBlock.ref("org.zon", ""),
}, orgPolicyRef()...)

// orgPolicyRef is org.zon's .policy and its .rules entries: the blocks
// of chock.zon, each with its own summary and example, but with no
// .default an org layer sets no ceiling.
func orgPolicyRef() []RefBlock {
	policy := policyBlock.ref("org.zon", "policy")
	policy.Summary = "The org layer: the same fields as chock.zon's .policy, but with no .default it sets no ceiling for what its rules do not name. A project rule that an org ceiling always caps is dead (rule-dead-by-org)."
	policy.Example = `.{
    .name = "acme",
    .policy = .{
        .default = .allow,
        .allow = .{"exec.path.gh"},
        .ask = .{"exec.path.git"},
        .deny = .{"exec.path.curl"},
        .rules = .{ .{ .action = "exec.path.wget", .decision = .deny, .why = "use the proxy" } },
    },
}`
	for i := range policy.Fields {
		if policy.Fields[i].Name == "default" {
			policy.Fields[i].Default = ".allow"
		}
	}
	rules := ruleBlock.ref("org.zon", "policy.rules[]")
	rules.Summary = "One org rule written as a struct, as in chock.zon."
	rules.Example = `.{
    .name = "acme",
    .policy = .{
        .rules = .{
            .{ .action = "exec.path.curl", .decision = .deny, .why = "fetch through the proxy" },
            .{ .action = "exec.path.git", .decision = .deny, .args = .{ "push", .{ "-f", "--force" } }, .why = "no force pushes" },
        },
    },
}`
	return []RefBlock{policy, rules}
}

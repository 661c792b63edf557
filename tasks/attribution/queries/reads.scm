; Candidate reads: identifiers and one-level property accesses. The analyzer keeps those naming state
; and drops the positions that are writes or declarations.
(identifier) @read
(shorthand_property_identifier) @read
(member_expression object: (identifier) @read.object property: (property_identifier) @read.property) @read.member

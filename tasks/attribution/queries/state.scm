; State: top-level let/const/var declarations of the page's scripts (objects among them hold state
; in their properties), and every write to a variable or a property.

(program (lexical_declaration (variable_declarator name: (identifier) @state.name) @state.decl))
(program (variable_declaration (variable_declarator name: (identifier) @state.name) @state.decl))

(assignment_expression left: (_) @write) @write.expr
(augmented_assignment_expression left: (_) @write) @write.expr
(update_expression argument: (_) @write) @write.expr

; Mutating method calls on a variable or property count as writes (state.items.push(x)).
(call_expression
  function: (member_expression
    object: [(identifier) (member_expression)] @write
    property: (property_identifier) @write.method)
  (#any-of? @write.method "push" "pop" "shift" "unshift" "splice" "sort" "reverse" "fill" "set" "add" "delete" "clear")) @write.expr

; Approximate calls: the callee is named by its identifier or the property of a member expression.
(call_expression function: (identifier) @callee) @call
(call_expression function: (member_expression property: (property_identifier) @callee)) @call
(new_expression constructor: (identifier) @callee) @call

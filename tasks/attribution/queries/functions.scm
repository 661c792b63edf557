; Functions, arrow functions and methods, named from their declarators or keys (paper B.3).
; @function is the function node, @name its name, @def the wider defining node when there is one.

(function_declaration name: (identifier) @name) @function @def
(generator_function_declaration name: (identifier) @name) @function @def

(variable_declarator
  name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)] @function) @def

(assignment_expression
  left: (identifier) @name
  right: [(arrow_function) (function_expression)] @function) @def

(assignment_expression
  left: (member_expression property: (property_identifier) @name)
  right: [(arrow_function) (function_expression)] @function) @def

(pair
  key: [(property_identifier) (string (string_fragment))] @name
  value: [(arrow_function) (function_expression)] @function) @def

(method_definition name: [(property_identifier) (private_property_identifier)] @name) @function @def

; Anonymous ones (callbacks, handlers); the analyzer keeps the named capture when both match.
(arrow_function) @function
(function_expression) @function
(generator_function) @function

; Event bindings with their handler: addEventListener(type, handler) and on* properties.
(call_expression
  function: (member_expression
    object: (_) @target
    property: (property_identifier) @method)
  arguments: (arguments . (string (string_fragment) @event) . (_) @handler)
  (#eq? @method "addEventListener")) @binding

(assignment_expression
  left: (member_expression
    object: (_) @target
    property: (property_identifier) @event)
  right: (_) @handler
  (#match? @event "^on[a-z]+$")) @binding

; HTML side: inline scripts (with their start tag, to read type=) and on* attributes.
(script_element (start_tag) @script.start (raw_text) @script.code)
(attribute
  (attribute_name) @attr.name
  (quoted_attribute_value (attribute_value) @attr.value)
  (#match? @attr.name "^[oO][nN][a-zA-Z]+$")) @attr

; Strings, comments, regexes and template text: never a source of relations (paper B.3 masks them).
(string) @masked
(comment) @masked
(regex) @masked
(template_string (string_fragment) @masked)

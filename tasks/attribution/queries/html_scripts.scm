; HTML side, for the scoped analyzer: every closed <script> element by its tags (its body may be
; left out of the parse, so there is no raw_text to capture).
(script_element (start_tag) @script.start (end_tag) @script.end)

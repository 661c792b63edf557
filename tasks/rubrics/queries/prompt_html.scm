; The HTML a query shows (tasks/rubrics/prompt_html.py), over one fragment of the query parsed as HTML.
; Tag and attribute names match in either case ((?i)), as HTML reads them.

; Every tag that opens an element, by its name: an id="..." written inside it is declared by it.
([(start_tag (tag_name) @tag.name) (self_closing_tag (tag_name) @tag.name)] @tag)

; Every attribute of a tag (its parent), with its value when it has one, quoted or not.
(attribute (attribute_name) @attr.name [(attribute_value) (quoted_attribute_value)]? @attr.value)

; <label for="x">…</label>: the label of x is what lies between its two tags.
((element
   (start_tag (tag_name) @label.name
     (attribute (attribute_name) @label.for (quoted_attribute_value (attribute_value) @label.target))) @label.open
   (end_tag) @label.close)
 (#match? @label.name "(?i)^label$")
 (#match? @label.for "(?i)^for$"))

; <button id="x">…</button>, and the other tags whose text is what they show: the inner text of x.
((element
   (start_tag (tag_name) @inner.name
     (attribute (attribute_name) @inner.attr (quoted_attribute_value (attribute_value) @inner.id))) @inner.open
   (end_tag) @inner.close)
 (#match? @inner.name "(?i)^(button|option|span|p|div|output|td|h[0-9]|label|strong|b)$")
 (#match? @inner.attr "(?i)^id$"))

; <option …>…</option>: an option of the <select> around it.
((element (start_tag (tag_name) @option.name) @option.open (end_tag) @option.close)
 (#match? @option.name "(?i)^option$"))

; The text of a <script> or <style>: left open (no end tag after it), it runs over everything after it.
(raw_text) @raw

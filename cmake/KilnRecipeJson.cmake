# kiln_recipe_json_escape(<out_var> <text>): a path as it may stand inside a JSON string of a
# configured recipe (plugins/*/recipes/*.json.in, share/kiln/kiln-data.json).
include_guard(GLOBAL)

function(kiln_recipe_json_escape out_var text)
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REPLACE "\"" "\\\"" text "${text}")
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()

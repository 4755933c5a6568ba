# Embeds web files in the binary (cmake -P). Two modes:
# - a page: INPUT, OUTPUT, SYMBOL, HEADER: a C++ source defining minfer::server::<SYMBOL> (the
#   text of INPUT) declared in <HEADER>;
# - the chat page's static files: MANIFEST (lines "URL_PATH|FILE"), OUTPUT: a C++ source defining
#   minfer::server::kWebAssets (server/chat_page.h), each file as pieces of string literals.
# Text goes into raw string literals of at most 16000 bytes each (compilers accept longer ones,
# the standard only promises 65536 characters per literal), cut only between UTF-8 characters so
# each piece is valid on its own; binary files (fonts) go into "\xHH" literals of 4000 bytes.
cmake_policy(VERSION 3.21)

# GCC refuses unpaired Unicode bidirectional controls in source (-Wbidi-chars; KaTeX's script has
# one): each goes in as "\xHH" escapes between two raw literals.
set(minfer_bidi_controls "")
foreach(bytes "128;170" "128;171" "128;172" "128;173" "128;174" "129;166" "129;167" "129;168"
        "129;169")  # U+202A..U+202E, U+2066..U+2069
  string(ASCII 226 ${bytes} c)
  list(APPEND minfer_bidi_controls "${c}")
endforeach()

# The raw string literals holding `content`, one a line, each followed by `suffix`.
function(minfer_text_literals content suffix out_var)
  string(LENGTH "${content}" n)
  set(body "")
  set(pos 0)
  while(pos LESS n)
    math(EXPR cut "${pos} + 16000")
    if(cut GREATER_EQUAL n)
      set(cut ${n})
    else()
      # Back off while the byte at the cut continues a UTF-8 character (10xxxxxx).
      while(TRUE)
        string(SUBSTRING "${content}" ${cut} 1 c)
        string(HEX "${c}" h)
        if(NOT h MATCHES "^[89ab]")
          break()
        endif()
        math(EXPR cut "${cut} - 1")
      endwhile()
    endif()
    math(EXPR len "${cut} - ${pos}")
    string(SUBSTRING "${content}" ${pos} ${len} piece)
    if(piece MATCHES "\\)minfer_web\"")
      message(FATAL_ERROR "${INPUT}: holds ')minfer_web\"', which ends the raw string literal")
    endif()
    foreach(c IN LISTS minfer_bidi_controls)
      string(HEX "${c}" h)
      string(REGEX REPLACE "([0-9a-f][0-9a-f])" "\\\\x\\1" escaped "${h}")
      string(REPLACE "${c}" ")minfer_web\" \"${escaped}\" R\"minfer_web(" piece "${piece}")
    endforeach()
    string(APPEND body "R\"minfer_web(${piece})minfer_web\"${suffix}\n")
    set(pos ${cut})
  endwhile()
  set(${out_var} "${body}" PARENT_SCOPE)
endfunction()

# The "\xHH" string literals holding the bytes of file `path`, one a line, each followed by
# `suffix`.
function(minfer_binary_literals path suffix out_var)
  file(READ "${path}" hex HEX)
  string(LENGTH "${hex}" n)
  set(body "")
  set(pos 0)
  while(pos LESS n)
    string(SUBSTRING "${hex}" ${pos} 8000 piece)
    string(REGEX REPLACE "([0-9a-f][0-9a-f])" "\\\\x\\1" piece "${piece}")
    string(APPEND body "\"${piece}\"${suffix}\n")
    math(EXPR pos "${pos} + 8000")
  endwhile()
  set(${out_var} "${body}" PARENT_SCOPE)
endfunction()

# The Content-Type a static file is served with, from its name.
function(minfer_content_type path out_var)
  if(path MATCHES "\\.js$")
    set(type "text/javascript; charset=utf-8")
  elseif(path MATCHES "\\.css$")
    set(type "text/css; charset=utf-8")
  elseif(path MATCHES "\\.woff2$")
    set(type "font/woff2")
  elseif(path MATCHES "\\.html$")
    set(type "text/html; charset=utf-8")
  else()
    message(FATAL_ERROR "${path}: no Content-Type known for this kind of file")
  endif()
  set(${out_var} "${type}" PARENT_SCOPE)
endfunction()

# Writes `text` to OUTPUT, touching it only when it changed (no needless recompiles).
function(minfer_write_output text)
  file(WRITE "${OUTPUT}.tmp" "${text}")
  file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
  file(REMOVE "${OUTPUT}.tmp")
endfunction()

if(DEFINED MANIFEST)
  file(STRINGS "${MANIFEST}" entries)
  set(arrays "")
  set(table "")
  set(i 0)
  foreach(entry IN LISTS entries)
    string(REPLACE "|" ";" fields "${entry}")
    list(GET fields 0 url)
    list(GET fields 1 file)
    minfer_content_type("${file}" type)
    if(file MATCHES "\\.woff2$")
      minfer_binary_literals("${file}" "sv," pieces)
    else()
      file(READ "${file}" content)
      set(INPUT "${file}")
      minfer_text_literals("${content}" "sv," pieces)
    endif()
    if(pieces STREQUAL "")
      set(pieces "\"\"sv,\n")
    endif()
    string(APPEND arrays "// ${file}\nconst std::string_view kAsset${i}[] = {\n${pieces}};\n\n")
    string(APPEND table "    {\"${url}\", \"${type}\", kAsset${i}, std::size(kAsset${i})},\n")
    math(EXPR i "${i} + 1")
  endforeach()
  minfer_write_output("// Generated from ${MANIFEST} by src/server/embed_web.cmake: do not edit.
#include <iterator>
#include <string_view>

#include \"server/chat_page.h\"

namespace minfer::server {

namespace {

using namespace std::string_view_literals;

${arrays}}  // namespace

const WebAsset kWebAssets[] = {
${table}};
const size_t kWebAssetCount = std::size(kWebAssets);

}  // namespace minfer::server
")
  return()
endif()

file(READ "${INPUT}" content)
minfer_text_literals("${content}" "" body)
if(body STREQUAL "")
  set(body "\"\"")
endif()
minfer_write_output("// Generated from ${INPUT} by src/server/embed_web.cmake: do not edit.\n#include \"${HEADER}\"\n\nnamespace minfer::server {\n\nconst char* const ${SYMBOL} =\n${body};\n\n}  // namespace minfer::server\n")

# Turns a web file into a C++ source defining minfer::server::<SYMBOL> declared in <HEADER>
# (cmake -P; INPUT, OUTPUT, SYMBOL, HEADER).
# The text goes into raw string literals of at most 16000 bytes each (compilers accept longer
# ones, the standard only promises 65536 characters per literal), concatenated by the compiler.
file(READ "${INPUT}" content)
string(LENGTH "${content}" n)
set(body "")
set(pos 0)
while(pos LESS n)
  string(SUBSTRING "${content}" ${pos} 16000 piece)
  string(APPEND body "R\"minfer_web(${piece})minfer_web\"\n")
  math(EXPR pos "${pos} + 16000")
endwhile()
if(body STREQUAL "")
  set(body "\"\"")
endif()
file(WRITE "${OUTPUT}.tmp" "// Generated from ${INPUT} by src/server/embed_web.cmake: do not edit.\n#include \"${HEADER}\"\n\nnamespace minfer::server {\n\nconst char* const ${SYMBOL} =\n${body};\n\n}  // namespace minfer::server\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")

# The files the chat page (web/chat.html, served at /) loads from /static/: its own script and
# style, and Debian's browser builds of markdown-it, highlight.js and KaTeX with KaTeX's woff2
# fonts, read from /usr/share/javascript (MINFER_WEB_JS_DIR) at build time and embedded in the
# binary by src/server/embed_web.cmake (the page loads nothing from anywhere else).
# Sets minfer_web_assets_cpp to the generated source (minfer::server::kWebAssets).

set(MINFER_WEB_JS_DIR /usr/share/javascript CACHE PATH
    "where Debian's libjs-* packages put the browser builds the chat page embeds")
set(_js "${MINFER_WEB_JS_DIR}")
# Triples: the path under /static/, the file, the Debian package that installs it ("-": ours).
set(_assets
    chat.js "${CMAKE_SOURCE_DIR}/web/chat.js" -
    chat.css "${CMAKE_SOURCE_DIR}/web/chat.css" -
    markdown.js "${CMAKE_SOURCE_DIR}/web/markdown.js" -
    mcp.js "${CMAKE_SOURCE_DIR}/web/mcp.js" -
    tools.js "${CMAKE_SOURCE_DIR}/web/tools.js" -
    markdown-it.js "${_js}/markdown-it/markdown-it.js" libjs-markdown-it
    highlight.min.js "${_js}/highlight.js/highlight.min.js" libjs-highlight.js
    highlight-github.css "${_js}/highlight.js/styles/github.css" libjs-highlight.js
    katex/katex.min.js "${_js}/katex/katex.min.js" libjs-katex
    katex/katex.min.css "${_js}/katex/katex.min.css" libjs-katex)
foreach(font AMS-Regular Caligraphic-Bold Caligraphic-Regular Fraktur-Bold Fraktur-Regular
        Main-Bold Main-BoldItalic Main-Italic Main-Regular Math-BoldItalic Math-Italic
        SansSerif-Bold SansSerif-Italic SansSerif-Regular Script-Regular Size1-Regular
        Size2-Regular Size3-Regular Size4-Regular Typewriter-Regular)
  list(APPEND _assets katex/fonts/KaTeX_${font}.woff2
       "${_js}/katex/fonts/KaTeX_${font}.woff2" fonts-katex)
endforeach()

set(_manifest "")
set(_files "")
list(LENGTH _assets _n)
math(EXPR _last "${_n} - 1")
foreach(i RANGE 0 ${_last} 3)
  math(EXPR j "${i} + 1")
  math(EXPR k "${i} + 2")
  list(GET _assets ${i} _url)
  list(GET _assets ${j} _file)
  list(GET _assets ${k} _package)
  if(NOT EXISTS "${_file}")
    if(_package STREQUAL "-")
      message(FATAL_ERROR "the chat page's file ${_file} is missing")
    endif()
    message(FATAL_ERROR "the chat page needs ${_file}, from Debian's package ${_package}: "
                        "apt-get install ${_package} (scripts/setup.sh installs it)")
  endif()
  string(APPEND _manifest "/static/${_url}|${_file}\n")
  list(APPEND _files "${_file}")
endforeach()

set(_out "${CMAKE_CURRENT_BINARY_DIR}/generated/web_assets.cpp")
set(_manifest_file "${CMAKE_CURRENT_BINARY_DIR}/generated/web_assets.txt")
file(CONFIGURE OUTPUT "${_manifest_file}" CONTENT "${_manifest}" @ONLY)
add_custom_command(
  OUTPUT "${_out}"
  COMMAND "${CMAKE_COMMAND}" -DMANIFEST=${_manifest_file} -DOUTPUT=${_out}
          -P "${CMAKE_CURRENT_SOURCE_DIR}/server/embed_web.cmake"
  DEPENDS ${_files} "${_manifest_file}" "${CMAKE_CURRENT_SOURCE_DIR}/server/embed_web.cmake"
  COMMENT "Embedding the chat page's static files (web/, markdown-it, highlight.js, KaTeX)")
set(minfer_web_assets_cpp "${_out}")

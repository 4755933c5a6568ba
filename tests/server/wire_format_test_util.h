// Streams for the reply-format tests (server/wire_format.h): a reply's events as one format
// writes them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "server/openai_reply.h"
#include "server/wire_format.h"

namespace minfer::server {

// The frames of a whole stream (the opening ones, then each event's), and the events' parts put
// together as the blocking writer does.
inline std::vector<std::string> stream_all(WireFormat& format,
                                           const std::vector<BatchEvent>& events,
                                           ReplyParts& parts) {
  std::vector<std::string> frames = format.stream_open();
  for (const BatchEvent& e : events) {
    parts.add(e);
    for (std::string& f : format.stream_event(e)) frames.push_back(std::move(f));
  }
  return frames;
}

// Makes `e` a reply's final event: its finish and counts.
inline void finish_event(BatchEvent& e, FinishReason finish, int64_t n_prompt, int64_t n_cached,
                         int64_t n_generated) {
  e.done = true;
  e.finish = finish;
  e.stats.n_prompt = n_prompt;
  e.stats.n_cached = n_cached;
  e.stats.n_generated = n_generated;
}

}  // namespace minfer::server

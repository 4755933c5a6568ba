// The tools the chat-format tests (qwen35_chat.test.js, channel_chat.test.js) call: typed and
// bounded parameters (so a random model's forced calls end within a few hundred tokens), an
// enum, an array and a tool without parameters; and a grammar that forces a given reply.
export const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The weather in a city',
      parameters: {
        type: 'object',
        properties: {
          city: { type: 'string', maxLength: 24 },
          days: { type: 'integer', minimum: 1, maximum: 7 },
          hourly: { type: 'boolean' },
        },
        required: ['city', 'days'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'plot',
      description: 'Plot points',
      parameters: {
        type: 'object',
        properties: { points: { type: 'array', items: { type: 'number' }, maxItems: 3 }, title: { type: 'string', enum: ['a', 'b'] } },
        required: ['points', 'title'],
        additionalProperties: false,
      },
    },
  },
  { type: 'function', function: { name: 'get_time', description: 'The time', parameters: { type: 'object', properties: {} } } },
];

// A GBNF grammar whose only sentence is `text`: the reply the model is made to write.
export const literalGrammar = (text) => `root ::= ${JSON.stringify(text)}`;

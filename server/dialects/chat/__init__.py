"""OpenAI's Chat Completions dialect: `POST /v1/chat/completions` as one stateless create (stored only with
`store: true`, as OpenAI's stored completions), its reply and its chunk stream.

    wire.py      the create body as OpenAI names it (messages, tools, response_format, ...)
    objects.py   what is answered: chat.completion, chat.completion.chunk, the stored completions' lists
    decode.py    the body -> the create request and its input steps (every field honoured, or a 400)
    encode.py    an interaction -> chat.completion; a stored one's messages
    events.py    the Interactions event log's frames -> chat.completion.chunk frames (the stream's grammar)
"""

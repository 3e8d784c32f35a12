"""The dialects other than Google's Interactions API, each a codec over the one record and the one event log
(DESIGN.md, principle 13): `decode` turns a dialect's request into the create request and input steps the
runner takes, `encode` turns a stored record (or an answered interaction) into the dialect's object, and
`events` renders the interaction's event log as the dialect's stream: each dialect's event grammar lives in
its own package, never in the runner. Pure: no I/O, no store, no HTTP framework."""

"""From text to a verified module: parsing, the checks xDSL's verifier lets through,
re-specialisation from a program's header, and `load_program`."""

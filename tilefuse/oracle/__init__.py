"""The numpy oracle: evaluates any program at any IR level. It imports only the IR
layer and shares no code with what it checks."""

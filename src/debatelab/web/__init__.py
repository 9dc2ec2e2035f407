"""The interactive demo: a local web server and its page (``debatelab serve``)."""

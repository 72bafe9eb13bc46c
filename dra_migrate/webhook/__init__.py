"""The dra-migrate admission webhook: converts device-plugin Pods to DRA claims at admission.

`dra-migrate serve` runs it (gunicorn + TLS, see webhook/server.py); the pieces are small
modules so that the pure parts (envelope, review decision, messages, CEL) need no server.
"""

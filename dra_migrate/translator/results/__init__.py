"""The translator's last stage: converted text on stdout, the reports of a run (text, JSON and the
formats reviewers' tools read) and the lines findings point at. Imports only the stages below."""

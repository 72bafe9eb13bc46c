"""The translator's first stage: which files a run reads, their exact bytes and bounds, the names they
are shown by, the prefilter that passes unchanged documents unparsed, and Helm charts among them."""

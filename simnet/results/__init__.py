"""Results as plain data (``result``) and what they say about links: reports and warnings
(``analysis``)."""

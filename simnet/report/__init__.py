"""Reports: tables, files and plots made from topologies and results."""

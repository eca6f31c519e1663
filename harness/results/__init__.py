"""Result files read back and merged: load, the typed report (report, causes), aggregate, diff."""

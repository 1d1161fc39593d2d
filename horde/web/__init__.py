"""The web page at `/`: static HTML, CSS and JavaScript that use the public API only."""

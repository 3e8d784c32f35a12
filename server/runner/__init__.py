"""Running one interaction: history -> upstream -> events -> final state. Used by web and worker alike."""

"""Host facts (sysfs, NVML, DMI) and spec-sheet peaks with the path model."""

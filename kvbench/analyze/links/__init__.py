"""How the links of a cluster look, and did one drop: one launch's pairs as a matrix with its slow
links named (`link_matrix`), two launches compared link by link (`link_compare`) against each
link's own noise (`link_noise`), and nvbandwidth's matrix shape (`nvbandwidth_shape`). May import
the shared leaves of analyze/ and `regress` (a link is judged as a case is); no other room."""

# heatsible test bed: the Heat stack parameters for the PV cluster package.
#
# Tacker (v1 LCM, OpenStack VIM) loads this class from the package when the
# instantiate request names it (additionalParams "lcm-operation-user-data"
# and "lcm-operation-user-data-class") and passes its return value to Heat as
# the stack's parameters. It fills the BaseHOT's nfv parameter:
#   nfv.VDU.<vdu>.flavor            the VDU's requested_additional_capability_name
#   nfv.VDU.<vdu>.image             the VDU's sw_image_data.name (no Glance on the bed)
#   nfv.VDU.<vdu>.desired_capacity  the VDU's VduInitialDelta
#   nfv.CP.<cp>.network             the extVirtualLinks[].resourceId whose extCps name the CP
import copy

from tacker.vnfm.lcm_user_data.abstract_user_data import AbstractUserData
import tacker.vnfm.lcm_user_data.utils as user_data_utils


def _initial_deltas(vnfd_dict):
    out = {}
    for policy in vnfd_dict.get('topology_template', {}).get('policies', []) or []:
        for _, p in policy.items():
            if p.get('type') == 'tosca.policies.nfv.VduInitialDelta':
                n = p.get('properties', {}).get('initial_delta', {}).get('number_of_instances')
                for vdu in p.get('targets', []):
                    out[vdu] = n
    return out


def _networks(inst_req_info):
    out = {}
    for ext_vl in inst_req_info.ext_virtual_links or []:
        for ext_cp in ext_vl.ext_cps or []:
            out[ext_cp.cpd_id] = ext_vl.resource_id
    return out


class HeatsibleUserData(AbstractUserData):

    @staticmethod
    def instantiate(base_hot_dict=None, vnfd_dict=None, inst_req_info=None, grant_info=None):
        params = user_data_utils.create_initial_param_dict(base_hot_dict)
        flavors = user_data_utils.create_vdu_flavor_capability_name_dict(vnfd_dict)
        images = user_data_utils.create_sw_image_dict(vnfd_dict)
        deltas = _initial_deltas(vnfd_dict)
        nets = _networks(inst_req_info)
        final = copy.deepcopy(params)
        for vdu, v in final['nfv']['VDU'].items():
            v['flavor'] = flavors.get(vdu)
            v['image'] = images.get(vdu)
            if vdu in deltas:
                v['desired_capacity'] = deltas[vdu]
        for cp, v in final['nfv']['CP'].items():
            if cp not in nets:
                raise ValueError('CP %s: no extVirtualLinks entry names it in extCps' % cp)
            v['network'] = nets[cp]
        return final

"""Stand-in for the pip bootstrap script ansible-test downloads.

ansible-test (ansible-core's) makes each sanity test's virtualenv without pip
and bootstraps pip there with get-pip.py from ci-files.testing.ansible.com,
cached as ~/.ansible/test/cache/get_pip_X_Y.py. This machine reaches PyPI
only: venvs.sh lays this file there instead, beside the pip wheel it
downloaded from PyPI, and ansible-test runs it as
    get_pip_X_Y.py [pip options] pip==X.Y --no-setuptools --no-wheel
It installs that wheel, run from the wheel itself, without the network.
"""
import glob
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    args = [a for a in sys.argv[1:] if a not in ('--no-setuptools', '--no-wheel')]
    wheels = sorted(glob.glob(os.path.join(HERE, 'pip-*-py3-none-any.whl')))
    if not wheels:
        sys.exit('ansible-test-get-pip: no pip wheel beside %s (testbed/ansible/venvs.sh build ansible-test)' % __file__)
    sys.path.insert(0, wheels[-1])
    from pip._internal.cli.main import main as pip_main  # pylint: disable=import-outside-toplevel
    return pip_main(['install', '--no-index', '--find-links', HERE] + args)


if __name__ == '__main__':
    sys.exit(main())
